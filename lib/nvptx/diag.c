/* diag.c - catches LLVM's diagnostics while this stage works on a context.
 *
 * The C API reports why linking or reading bitcode failed only through the
 * context's diagnostic handler; the default one prints to stderr (and some
 * errors abort). We install a handler for the duration of a call, keep the
 * error text for fz_error and drop warnings and remarks, then put back
 * whatever handler the caller had: the context is the caller's.
 */
#include "nvptx/nvptx.h"

#include <string.h>

static void on_diagnostic(LLVMDiagnosticInfoRef info, void *opaque) {
  fz_nvptx_diag *diag = opaque;
  if (LLVMGetDiagInfoSeverity(info) != LLVMDSError)
    return;
  char *text = LLVMGetDiagInfoDescription(info);
  size_t used = strlen(diag->message);
  size_t room = sizeof diag->message - used;
  if (diag->num_errors > 0 && room > 2) {
    memcpy(diag->message + used, "; ", 3);
    used += 2;
    room -= 2;
  }
  if (text && room > 1) {
    size_t n = strlen(text);
    if (n >= room)
      n = room - 1;
    memcpy(diag->message + used, text, n);
    diag->message[used + n] = '\0';
  }
  diag->num_errors++;
  LLVMDisposeMessage(text);
}

void fz_nvptx_diag_begin(fz_nvptx_diag *diag, LLVMContextRef context) {
  memset(diag, 0, sizeof *diag);
  diag->context = context;
  diag->saved_handler = LLVMContextGetDiagnosticHandler(context);
  diag->saved_context = LLVMContextGetDiagnosticContext(context);
  LLVMContextSetDiagnosticHandler(context, on_diagnostic, diag);
}

void fz_nvptx_diag_end(fz_nvptx_diag *diag) {
  LLVMContextSetDiagnosticHandler(diag->context, diag->saved_handler,
                                  diag->saved_context);
}
