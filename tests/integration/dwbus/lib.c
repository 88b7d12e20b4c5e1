/* libdw as `--lines` would meet it on a file truncated under its mapping (tests/sections/lines.sh): this library is
 * loaded in libdw's place (__VRAMGUARD_LIBDW) and depends on the real one, so that the command's dlsym finds every
 * function there but this one, which dies of SIGBUS as a read of the cut mapping would. */
#include <elfutils/libdwfl.h>
#include <signal.h>

Dwfl_Line *dwfl_module_getsrc(Dwfl_Module *mod, Dwarf_Addr addr)
{
	(void)mod, (void)addr;
	raise(SIGBUS);
	return NULL;
}
