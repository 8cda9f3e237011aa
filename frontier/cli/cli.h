/* The command-line tool: one function per subcommand (git.c's table). */
#ifndef FR_CLI_H
#define FR_CLI_H

#include <stdio.h>

/* Each returns an exit code (enum fr_status); only main() exits. argv[0] is
 * the subcommand's name. */
int cmd_inspect(int argc, char **argv);
int cmd_quantizers(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_pareto(int argc, char **argv);
int cmd_allocate(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_quantize(int argc, char **argv);
int cmd_annotate(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_sensitivity(int argc, char **argv);

/* Prints "frontier <cmd>: <msg>" style usage errors and returns FR_E_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "frontier <argv joined>" for the dataset's command_line attribute, each
 * argument quoted for a POSIX shell where it needs it (argv[0] is the
 * subcommand); NULL when out of memory. */
char *cli_command_line(int argc, char **argv);

#endif
