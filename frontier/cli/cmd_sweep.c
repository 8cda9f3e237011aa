/* PLACEHOLDER until the issue implementing 'frontier sweep' lands. */
#include "cli.h"
#include "core/error.h"

int cmd_sweep(int argc, char **argv)
{
    (void)argc;
    return cli_usage_error(argv[0], "not implemented yet");
}
