/* frequency.c -- switch frequency and batching (notebook 08): placeholder, filled in by
 * the switch-frequency experiment. */
#include "labkit_core.h"
