// The dlsym entry point of libcarve-mgpu.so, in assembly because of one rule of glibc: dlsym
// resolves RTLD_NEXT relative to the object that called it, found from its return address. A C++
// dlsym that calls glibc's would make libcarve-mgpu.so the caller, so a library loaded after it
// that wraps a function and looks up "the next one" with dlsym(RTLD_NEXT, name) would find its
// own definition again and recurse. The entry asks CarveDlsymSubstitute (hooks_resolve.cc) first;
// when that has no wrapper to hand back it tail-jumps to glibc's dlsym with the caller's return
// address untouched, so glibc sees the real caller. (endbr64 and `hint #34`, BTI's landing pad,
// are no-ops on processors without CET or BTI.)
#include "interposer/shell/hooks.h"

void* carve_real_dlsym = nullptr;

#if defined(__x86_64__)
__asm__(R"(
  .text
  .globl dlsym
  .type dlsym, @function
  .p2align 4
dlsym:
  .cfi_startproc
  endbr64
  pushq %rdi
  .cfi_adjust_cfa_offset 8
  pushq %rsi
  .cfi_adjust_cfa_offset 8
  subq $8, %rsp
  .cfi_adjust_cfa_offset 8
  movq 24(%rsp), %rdx
  call CarveDlsymSubstitute
  addq $8, %rsp
  .cfi_adjust_cfa_offset -8
  popq %rsi
  .cfi_adjust_cfa_offset -8
  popq %rdi
  .cfi_adjust_cfa_offset -8
  testq %rax, %rax
  jnz 1f
  movq carve_real_dlsym(%rip), %r11
  testq %r11, %r11
  jz 1f
  jmp *%r11
1:
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#elif defined(__aarch64__)
__asm__(R"(
  .text
  .globl dlsym
  .type dlsym, %function
  .p2align 4
dlsym:
  .cfi_startproc
  hint #34
  stp x29, x30, [sp, #-32]!
  .cfi_def_cfa_offset 32
  .cfi_offset 29, -32
  .cfi_offset 30, -24
  mov x29, sp
  stp x0, x1, [sp, #16]
  mov x2, x30
  bl CarveDlsymSubstitute
  cbnz x0, 1f
  ldp x0, x1, [sp, #16]
  ldp x29, x30, [sp], #32
  .cfi_remember_state
  .cfi_def_cfa_offset 0
  .cfi_restore 29
  .cfi_restore 30
  adrp x16, carve_real_dlsym
  ldr x16, [x16, :lo12:carve_real_dlsym]
  cbz x16, 2f
  br x16
2:
  mov x0, #0
  ret
1:
  .cfi_restore_state
  ldp x29, x30, [sp], #32
  .cfi_def_cfa_offset 0
  .cfi_restore 29
  .cfi_restore 30
  ret
  .cfi_endproc
  .size dlsym, .-dlsym
)");
#else
#error "libcarve-mgpu.so's dlsym entry is written for x86-64 and aarch64"
#endif
