/* PLACEHOLDER until the issue implementing 'frontier pareto' lands. */
#include "cli.h"
#include "core/error.h"

int cmd_pareto(int argc, char **argv)
{
    (void)argc;
    return cli_usage_error(argv[0], "not implemented yet");
}
