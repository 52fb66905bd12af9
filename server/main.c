/* main: the kforge binary. Ignores SIGPIPE (a closed client must surface as
 * a write error, not kill the daemon) and hands argv to the CLI. */
#include <signal.h>

#include "server/cli/cli.h"

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	return cli_main(argc, argv);
}
