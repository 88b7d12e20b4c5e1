/* A library as a hostile user can make one for `vramguard report --lines` (tests/sections/lines.sh): its DWARF
 * names the compile directory through the string section of a dwz "alt" file (DW_FORM_GNU_strp_alt), and its
 * .gnu_debugaltlink names that file "vgaltlink.fifo", beside the library, with a build ID no /usr/lib/debug has.
 * libdw opens that file by itself, by path, blocking, as soon as the compile directory is read (dwarf_getsrclines
 * does): no open of ours to guard. The section makes the name a FIFO; only the resolution's deadline ends it. */
	.text
	.globl	vgaltlink_func
	.type	vgaltlink_func, @function
vgaltlink_func:
	.file 1 "altlink.c"
	.loc 1 10 0
	nop
	.loc 1 11 0
	nop
	ret
.Lend:
	.size	vgaltlink_func, .-vgaltlink_func

	.section .debug_abbrev,"",@progbits
.Labbrev:
	.uleb128 1              /* abbreviation 1: */
	.uleb128 0x11           /* DW_TAG_compile_unit, */
	.byte 0                 /* no children */
	.uleb128 0x1b           /* DW_AT_comp_dir */
	.uleb128 0x1f21         /*   DW_FORM_GNU_strp_alt: in the alt file's .debug_str */
	.uleb128 0x11           /* DW_AT_low_pc */
	.uleb128 0x01           /*   DW_FORM_addr */
	.uleb128 0x12           /* DW_AT_high_pc */
	.uleb128 0x07           /*   DW_FORM_data8: a length, in DWARF 4 */
	.uleb128 0x10           /* DW_AT_stmt_list */
	.uleb128 0x17           /*   DW_FORM_sec_offset */
	.byte 0, 0
	.byte 0

	.section .debug_info,"",@progbits
.Linfo:
	.long .Linfo_end - .Linfo_start
.Linfo_start:
	.value 4                /* DWARF 4 */
	.long .Labbrev
	.byte 8                 /* address size */
	.uleb128 1
	.long 0                 /* DW_AT_comp_dir: offset 0 in the alt file's strings */
	.quad vgaltlink_func
	.quad .Lend - vgaltlink_func
	.long .Lline
.Linfo_end:

	.section .debug_aranges,"",@progbits
	.long .Lar_end - .Lar_start
.Lar_start:
	.value 2
	.long .Linfo
	.byte 8, 0
	.long 0                 /* padding: the ranges start at twice the address size */
	.quad vgaltlink_func
	.quad .Lend - vgaltlink_func
	.quad 0, 0
.Lar_end:

	/* The assembler puts the line program of the .loc directives here. */
	.section .debug_line,"",@progbits
.Lline:

	.section .gnu_debugaltlink,"",@progbits
	.asciz "vgaltlink.fifo"
	.byte 0xde, 0xad, 0xbe, 0xef, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05
	.byte 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f

	.section .note.GNU-stack,"",@progbits
