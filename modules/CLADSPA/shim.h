#ifndef HEAR_CLADSPA_SHIM_H
#define HEAR_CLADSPA_SHIM_H
#include <ladspa.h>
#endif
