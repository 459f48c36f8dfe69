// The weights file is data, not code: `make train` writes hear-model.bin (float16 weights after a
// header with the shapes and an FNV-1a checksum) and its SHA-256 beside it; #embed puts its bytes
// into the library.
#include "CHearModel.h"

static const unsigned char blob[] __attribute__((aligned(16))) = {
#embed "hear-model.bin"
};

const unsigned char *hear_model_data(void) { return blob; }
size_t hear_model_size(void) { return sizeof(blob); }
