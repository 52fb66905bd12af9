/* embed: a file of the source tree built into the binary with the
 * assembler's .incbin, so the daemon needs no data files at run time (the
 * page it serves, the Python it runs in a job). The path is relative to the
 * repository root, where the build runs; the Makefile names the file as a
 * prerequisite of the object, since -MMD does not see it. */
#ifndef KF_EMBED_H
#define KF_EMBED_H

/* Defines sym_start and sym_end, the first byte of file's contents and one
 * past its last (no NUL is added), as const char arrays in .rodata. */
#define EMBED_FILE(sym, file)                                                                \
	__asm__(".section .rodata\n.balign 16\n" #sym "_start:\n.incbin \"" file "\"\n" #sym \
		"_end:\n.previous\n");                                                       \
	extern const char sym##_start[] __asm__(#sym "_start");                              \
	extern const char sym##_end[] __asm__(#sym "_end")

#endif
