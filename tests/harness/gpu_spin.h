/*
 * Other work holding a GPU's SMs, for the tests that check a collective never hangs when not
 * all its blocks can be resident: a kernel whose blocks each fill one SM (all of its shared
 * memory, 1024 threads) and spin until released.
 */
#ifndef BT_TEST_GPU_SPIN_H
#define BT_TEST_GPU_SPIN_H

#ifdef __cplusplus
extern "C" {
#endif

/* Start the spinner on the current device on a stream of its own, on every SM but `free_sms`,
 * for at most `max_s` seconds; waits until its blocks run. Returns the SMs it holds, or -1. */
int bt_test_spin_start(int free_sms, double max_s);
/* Release the spinner and wait for it to end. */
void bt_test_spin_stop(void);

#ifdef __cplusplus
}
#endif

#endif
