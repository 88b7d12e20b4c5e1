/* dlsym: the pass-through must be a true tail call. glibc resolves RTLD_NEXT relative to the caller's return
 * address; if we forwarded with an ordinary call, "next" would be computed from vramguard, and a library preloaded
 * after us asking dlsym(RTLD_NEXT, "malloc") would get its own malloc back and recurse forever.
 *
 * vg_dlsym_route(handle, name) returns {ptr, handled} in two registers: handled != 0 means ptr is the answer (a
 * handle-scoped lookup of a cu* name, possibly replaced by our wrapper); otherwise we restore the arguments and
 * jump to the real dlsym, leaving the caller's return address untouched. */

#if defined(__x86_64__)
	.text
	.globl	dlsym
	.type	dlsym, @function
	.p2align 4
dlsym:
	.cfi_startproc
	endbr64
	pushq	%rdi
	.cfi_adjust_cfa_offset 8
	pushq	%rsi
	.cfi_adjust_cfa_offset 8
	subq	$8, %rsp
	.cfi_adjust_cfa_offset 8
	call	vg_dlsym_route
	addq	$8, %rsp
	.cfi_adjust_cfa_offset -8
	popq	%rsi
	.cfi_adjust_cfa_offset -8
	popq	%rdi
	.cfi_adjust_cfa_offset -8
	testq	%rdx, %rdx
	jnz	1f
	jmp	*vg_real_dlsym(%rip)
1:	ret
	.cfi_endproc
	.size	dlsym, .-dlsym
#elif defined(__aarch64__)
	.text
	.globl	dlsym
	.type	dlsym, %function
	.p2align 4
dlsym:
	.cfi_startproc
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	stp	x0, x1, [sp, #16]
	bl	vg_dlsym_route
	cbnz	x1, 1f
	ldp	x0, x1, [sp, #16]
	ldp	x29, x30, [sp], #32
	.cfi_def_cfa_offset 0
	adrp	x16, vg_real_dlsym
	ldr	x16, [x16, :lo12:vg_real_dlsym]
	br	x16
1:	ldp	x29, x30, [sp], #32
	ret
	.cfi_endproc
	.size	dlsym, .-dlsym
#else
#error "vramguard: dlsym tail-call stub not written for this architecture"
#endif
	.section .note.GNU-stack,"",%progbits
