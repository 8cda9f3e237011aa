/* PLACEHOLDER until the issue implementing 'frontier quantizers' lands. */
#include "cli.h"
#include "core/error.h"

int cmd_quantizers(int argc, char **argv)
{
    (void)argc;
    return cli_usage_error(argv[0], "not implemented yet");
}
