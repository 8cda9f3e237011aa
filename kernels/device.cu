/* Device discovery: never fails, never aborts on a machine without a GPU. */
#include <stdio.h>

#include "kcommon.cuh"

extern "C" int fr_cuda_device_count(void)
{
    int n = 0;
    /* no driver, no device, a driver older than the runtime: all "none" */
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky-free error so later calls start clean */
        return 0;
    }
    return n > 0 ? n : 0;
}

extern "C" fr_status fr_cuda_device_describe(int device, char *buf, size_t size, fr_error *err)
{
    fr_status st = FR_OK;
    cudaDeviceProp prop;
    int driver = 0, runtime = 0;
    int n = fr_cuda_device_count();
    if (device < 0 || device >= n)
        return fr_fail(err, FR_E_DEVICE, "no cuda device %d (%d present)", device, n);
    FR_CU(cudaGetDeviceProperties(&prop, device));
    FR_CU(cudaDriverGetVersion(&driver));
    FR_CU(cudaRuntimeGetVersion(&runtime));
    snprintf(buf, size, "%s, sm_%d%d, %d SMs, %.0f GiB, driver %d.%d, runtime %d.%d", prop.name,
             prop.major, prop.minor, prop.multiProcessorCount,
             (double)prop.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), driver / 1000,
             (driver % 1000) / 10, runtime / 1000, (runtime % 1000) / 10);
cleanup:
    return st;
}
