// Counts heap allocations made by the calling thread between begin and end, for the tests that
// require none on the audio path. The test executable defines malloc & co., so calls from every
// library in the process, the dlopened plugin included, pass through here.
#ifndef HEAR_MALLOC_COUNTER_H
#define HEAR_MALLOC_COUNTER_H

void hear_malloc_counter_begin(void);
/// Allocations (malloc, calloc, realloc, memalign family) on this thread since begin.
long hear_malloc_counter_end(void);
/// Bytes of heap in use in the whole process (mallinfo2: arena and mmap'ed chunks).
unsigned long hear_heap_in_use(void);

#endif
