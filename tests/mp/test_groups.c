/*
 * Group semantics with the library's default algorithm and protocol choices; see
 * groups_common.h for what is checked.
 */
#include "groups_common.h"

int main(void)
{
    return groups_main(NULL);
}
