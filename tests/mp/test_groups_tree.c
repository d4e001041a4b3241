/*
 * Group semantics with AllReduce forced onto the double binary tree on two channels
 * (BATON_ALGO=Tree, BATON_MIN_NCHANNELS=2); see groups_common.h for what is checked.
 */
#include "groups_common.h"

static const char *const env[] = {"BATON_ALGO=Tree", "BATON_MIN_NCHANNELS=2", NULL};

int main(void)
{
    return groups_main(env);
}
