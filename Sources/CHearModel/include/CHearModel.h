// The learned noise-suppression model's weights, compiled into the library (see model.c).
// Format: training/hear_training/train.py `export`; parsed by HearDSP's GainModel.
#ifndef CHEARMODEL_H
#define CHEARMODEL_H
#include <stddef.h>

/// The exported blob's bytes and length.
const unsigned char *hear_model_data(void);
size_t hear_model_size(void);

#endif
