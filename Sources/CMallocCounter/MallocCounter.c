#include "CMallocCounter.h"
#include <errno.h>
#include <malloc.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void __libc_free(void *pointer);

static __thread int counting;
static __thread long allocations;

void hear_malloc_counter_begin(void) { allocations = 0; counting = 1; }
long hear_malloc_counter_end(void) { counting = 0; return allocations; }

void *malloc(size_t size) { if (counting) allocations++; return __libc_malloc(size); }
void *calloc(size_t count, size_t size) { if (counting) allocations++; return __libc_calloc(count, size); }
void *realloc(void *pointer, size_t size) { if (counting) allocations++; return __libc_realloc(pointer, size); }
void free(void *pointer) { __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { if (counting) allocations++; return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { if (counting) allocations++; return __libc_memalign(alignment, size); }
int posix_memalign(void **result, size_t alignment, size_t size) {
  if (counting) allocations++;
  void *pointer = __libc_memalign(alignment, size);
  if (!pointer) return ENOMEM;
  *result = pointer;
  return 0;
}

unsigned long hear_heap_in_use(void) {
  struct mallinfo2 info = mallinfo2();
  return (unsigned long)(info.uordblks + info.hblkhd);
}
