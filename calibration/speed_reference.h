// The machine's speed at one moment: a fixed CPU kernel's time, taken when a cost database
// is measured and again around a real run, so that a report can tell the model's error from
// the machine's own drift between the two (a VM's speed moves by 10% within minutes).
#pragma once

namespace dtsim::calibration {

// The median time in seconds of a 384 x 384 x 384 fp32 GEMM (kernels/, the BLAS on one
// thread), the L2 evicted before each of 15 repeats after 3 warm-up runs:
// about 15 ms in all on the development VM.
double reference_kernel_s();

}  // namespace dtsim::calibration
