#ifndef HEAR_CHEARSYS_SHIM_H
#define HEAR_CHEARSYS_SHIM_H
/* Linux calls that glibc declares only under _GNU_SOURCE (accept4, pipe2, SO_PEERCRED's struct
   ucred, pthread_setname_np, pthread_timedjoin_np, dladdr), and the few sequences that are clearer
   in C: a thread created with explicit scheduling attributes and every signal blocked, and pinning
   the library that contains this code. Used only by Sources/HearSystem.
   _GNU_SOURCE is not defined here: it changes the system headers' definitions, and this module
   meets Foundation's in hearctl. The GNU calls are declared under names of our own instead, bound
   to the real symbols with asm labels. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SO_PEERCRED
#define SO_PEERCRED 17
#endif
#ifndef RTLD_NOLOAD
#define RTLD_NOLOAD 0x00004
#endif
#ifndef RTLD_NODELETE
#define RTLD_NODELETE 0x01000
#endif

extern int hear_gnu_accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) __asm__("accept4");
extern int hear_gnu_pipe2(int fds[2], int flags) __asm__("pipe2");
extern int hear_gnu_setname(pthread_t thread, const char *name) __asm__("pthread_setname_np");
extern int hear_gnu_timedjoin(pthread_t thread, void **result, const struct timespec *deadline) __asm__("pthread_timedjoin_np");
typedef struct {
    const char *dli_fname;
    void *dli_fbase;
    const char *dli_sname;
    void *dli_saddr;
} hear_dl_info;
extern int hear_gnu_dladdr(const void *address, hear_dl_info *info) __asm__("dladdr");
/* struct ucred, as the kernel fills it. */
struct hear_ucred {
    pid_t pid;
    uid_t uid;
    gid_t gid;
};

static inline int hear_accept4(int fd, int flags) { return hear_gnu_accept4(fd, 0, 0, flags); }
static inline int hear_pipe2(int fds[2], int flags) { return hear_gnu_pipe2(fds, flags); }

/* The peer's uid and pid through SO_PEERCRED, or -1 with errno set. */
static inline int hear_peer_credentials(int fd, unsigned int *uid, int *pid) {
    struct hear_ucred credentials;
    socklen_t length = sizeof credentials;
    int result = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length);
    if (result == 0) {
        *uid = credentials.uid;
        *pid = credentials.pid;
    }
    return result;
}

static inline int hear_gettid(void) { return (int)syscall(SYS_gettid); }
static inline int hear_set_thread_name(pthread_t thread, const char *name) { return hear_gnu_setname(thread, name); }

/* A background thread that owes nothing to its creator: SCHED_OTHER at priority 0 whatever the
   creating thread runs at (a host may call instantiate from a SCHED_FIFO thread), a niceness of at
   least 0, every signal blocked (the host's handlers run on the host's threads), and a name.
   Returns 0 or an errno value, like pthread_create. */
struct hear_thread_start {
    void *(*body)(void *);
    void *context;
};

static inline void *hear_thread_trampoline(void *argument) {
    struct hear_thread_start start = *(struct hear_thread_start *)argument;
    free(argument);
    /* Niceness is per thread on Linux and inherited from the creator: never run above normal. */
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0 && nice < 0) setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 0);
    return start.body(start.context);
}

static inline int hear_thread_create(pthread_t *thread, void *(*body)(void *), void *context, const char *name) {
    struct hear_thread_start *start = (struct hear_thread_start *)malloc(sizeof *start);
    if (!start) return ENOMEM;
    start->body = body;
    start->context = context;
    pthread_attr_t attributes;
    int result = pthread_attr_init(&attributes);
    if (result != 0) { free(start); return result; }
    struct sched_param parameters = { .sched_priority = 0 };
    if ((result = pthread_attr_setinheritsched(&attributes, PTHREAD_EXPLICIT_SCHED)) != 0
        || (result = pthread_attr_setschedpolicy(&attributes, SCHED_OTHER)) != 0
        || (result = pthread_attr_setschedparam(&attributes, &parameters)) != 0) {
        pthread_attr_destroy(&attributes);
        free(start);
        return result;
    }
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    result = pthread_create(thread, &attributes, hear_thread_trampoline, start);
    pthread_sigmask(SIG_SETMASK, &previous, 0);
    pthread_attr_destroy(&attributes);
    if (result != 0) { free(start); return result; }
    if (name) hear_gnu_setname(*thread, name);
    return 0;
}

/* pthread_join with a deadline in seconds; ETIMEDOUT if the thread is still running then. */
static inline int hear_join(pthread_t thread, double seconds) {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    long long nanoseconds = (long long)(seconds * 1e9) + deadline.tv_nsec;
    deadline.tv_sec += (time_t)(nanoseconds / 1000000000LL);
    deadline.tv_nsec = (long)(nanoseconds % 1000000000LL);
    return hear_gnu_timedjoin(thread, 0, &deadline);
}

/* Keeps the shared object holding this code loaded for the life of the process (dlclose becomes a
   no-op for it). 1 when pinned, 0 when this code is not in a dlopen'ed object, -1 on failure. */
static inline int hear_pin_self(void) {
    hear_dl_info info;
    if (!hear_gnu_dladdr((void *)&hear_pin_self, &info) || !info.dli_fname) return -1;
    void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    if (!self) return 0;
    /* The handle counts as a reference; NODELETE keeps the object whatever the count. */
    dlclose(self);
    return 1;
}
#endif
