/* web: embeds server/transport/web/index.html with the assembler's .incbin, so the
 * daemon serves the page without reading files at run time (the Makefile
 * rebuilds this object when the page changes). */
#include "server/transport/web.h"

__asm__(".section .rodata\n"
	".balign 16\n"
	"kf_web_index_start:\n"
	".incbin \"server/transport/web/index.html\"\n"
	"kf_web_index_end:\n"
	".previous\n");

extern const char kf_web_index_start[] __asm__("kf_web_index_start");
extern const char kf_web_index_end[] __asm__("kf_web_index_end");

const char *web_index_html(size_t *len)
{
	*len = (size_t)(kf_web_index_end - kf_web_index_start);
	return kf_web_index_start;
}
