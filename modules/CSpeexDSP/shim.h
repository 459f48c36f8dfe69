#ifndef HEAR_CSPEEXDSP_SHIM_H
#define HEAR_CSPEEXDSP_SHIM_H
#include <speex/speex_echo.h>
#endif
