/* target.c - the NVPTX target: registration, the architectures fz emits
 * for, target machines and the module's triple and data layout.
 *
 * The data layout is taken from the target machine rather than written out
 * here, so it always agrees with the LLVM fz links against. Target machines
 * are cheap to create and not shared between threads, so each compilation
 * makes its own. The PTX ISA version is left to LLVM (the CPU's own
 * minimum, e.g. 7.8 for sm_90): a newer one buys nothing our kernels use
 * and would only refuse to load on older drivers.
 */
#include "nvptx/nvptx.h"

#include <pthread.h>
#include <stdio.h>

#include <llvm-c/Target.h>

static const char NVPTX_TRIPLE[] = "nvptx64-nvidia-cuda";

/* Architectures LLVM 19 knows, from sm_70 up; ascending. */
static const int SUPPORTED_SM[] = {70, 72, 75, 80, 86, 87, 89, 90};
enum { NUM_SUPPORTED_SM = sizeof SUPPORTED_SM / sizeof SUPPORTED_SM[0] };

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_target(void) {
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

void fz_nvptx_init(void) { pthread_once(&init_once, init_target); }

int fz_nvptx_pick_sm(int device_sm) {
  int best = 0;
  for (int i = 0; i < NUM_SUPPORTED_SM; i++)
    if (SUPPORTED_SM[i] <= device_sm)
      best = SUPPORTED_SM[i];
  return best;
}

static bool sm_supported(int sm) {
  for (int i = 0; i < NUM_SUPPORTED_SM; i++)
    if (SUPPORTED_SM[i] == sm)
      return true;
  return false;
}

fz_status fz_nvptx_target_machine(int sm, int opt_level,
                                  LLVMTargetMachineRef *out, fz_error *err) {
  *out = NULL;
  fz_nvptx_init();
  if (!sm_supported(sm))
    return fz_error_set(err, FZ_ERR_UNSUPPORTED,
                        "cannot emit PTX for sm_%d: LLVM 19 targets sm_70 to "
                        "sm_90 (use fz_nvptx_pick_sm)",
                        sm);
  if (opt_level < 0 || opt_level > 3)
    return fz_error_set(err, FZ_ERR_ARGUMENT,
                        "optimisation level %d is not in 0..3", opt_level);

  LLVMTargetRef target = NULL;
  char *message = NULL;
  if (LLVMGetTargetFromTriple(NVPTX_TRIPLE, &target, &message)) {
    fz_status st = fz_error_set(err, FZ_ERR_LLVM, "no NVPTX target: %s",
                                message ? message : "(no message)");
    LLVMDisposeMessage(message);
    return st;
  }
  LLVMDisposeMessage(message);

  static const LLVMCodeGenOptLevel levels[] = {
      LLVMCodeGenLevelNone, LLVMCodeGenLevelLess, LLVMCodeGenLevelDefault,
      LLVMCodeGenLevelAggressive};
  char cpu[16];
  snprintf(cpu, sizeof cpu, "sm_%d", sm);
  LLVMTargetMachineRef tm =
      LLVMCreateTargetMachine(target, NVPTX_TRIPLE, cpu, "", levels[opt_level],
                              LLVMRelocDefault, LLVMCodeModelDefault);
  if (!tm)
    return fz_error_set(err, FZ_ERR_LLVM,
                        "LLVM could not create a target machine for %s", cpu);
  *out = tm;
  return FZ_OK;
}

fz_status fz_nvptx_set_target(LLVMModuleRef m, int sm, fz_error *err) {
  LLVMTargetMachineRef tm;
  fz_status st = fz_nvptx_target_machine(sm, 0, &tm, err);
  if (st != FZ_OK)
    return st;
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  char *text = LLVMCopyStringRepOfTargetData(layout);
  LLVMSetDataLayout(m, text);
  LLVMSetTarget(m, NVPTX_TRIPLE);
  LLVMDisposeMessage(text);
  LLVMDisposeTargetData(layout);
  LLVMDisposeTargetMachine(tm);
  return FZ_OK;
}
