/* The one translation unit that holds the portability layer's host code. */
#define GPU_PORT_IMPLEMENTATION
#include "gpu_port.h"
