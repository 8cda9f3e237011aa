/* PLACEHOLDER until the issue implementing 'frontier merge' lands. */
#include "cli.h"
#include "core/error.h"

int cmd_merge(int argc, char **argv)
{
    (void)argc;
    return cli_usage_error(argv[0], "not implemented yet");
}
