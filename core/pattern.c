#include "pattern.h"

#include <ctype.h>

fr_status fr_pattern_compile(regex_t *re, const char *pattern, const char *option, fr_error *err)
{
    int rc = regcomp(re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0) {
        char why[256];
        regerror(rc, re, why, sizeof why);
        /* regerror messages are capitalised ("Unmatched ( or \\("); ours are not */
        why[0] = (char)tolower((unsigned char)why[0]);
        return fr_fail(err, FR_E_USAGE, "invalid %s regex '%s': %s", option, pattern, why);
    }
    return FR_OK;
}
