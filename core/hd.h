/*
 * FR_HD marks small numeric functions that compile unchanged as C (CPU
 * reference) and as CUDA (__host__ __device__), so the CPU and the GPU share
 * one definition of every rounding rule (the ggml-common.h idea). This header
 * includes no CUDA header.
 */
#ifndef FR_HD_H
#define FR_HD_H

#if defined(__CUDACC__)
#define FR_HD static __host__ __device__ __forceinline__
#else
#define FR_HD static inline
#endif

#endif
