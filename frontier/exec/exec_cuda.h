#ifndef FR_EXEC_CUDA_H
#define FR_EXEC_CUDA_H

#include <stddef.h>

#include "core/error.h"
#include "core/registry.h"
#include "frontier/exec/executor.h"

#ifdef FRONTIER_HAVE_CUDA
/*
 * The CUDA executor (frontier/exec/exec_cuda.cu). Evaluates every (item, config)
 * of the plan on device opt->device (0 when negative): built-in data-free
 * configurations in one fused read per tensor and variant, plugins through
 * the registry's checked sweep_cuda / quantize_cuda, and whatever has no
 * CUDA path (CPU-only quantizers and plugins, tensors whose plugin or
 * output error needs them whole but which exceed the staging cap) through
 * fr_exec_cpu. With a Hessian, out_rel_err terms are computed on the device
 * (cuBLAS, FP32 unless cuda_tf32), and so is the diagonal term of
 * --diagonal-output-error. Tensors
 * stream host -> device through pinned double buffers on a copy stream
 * overlapped with the compute stream; synthetic tensors are generated on
 * the device.
 */
fr_status fr_exec_cuda(const fr_registry *reg, const fr_sweep_item *items, size_t n_items,
                       const fr_executor_options *opt, const fr_sweep_sink *sink, fr_error *err);
#endif

#endif
