#ifndef HEAR_CHEARSYS_SHIM_H
#define HEAR_CHEARSYS_SHIM_H
/* accept4, pipe2, SO_PEERCRED's struct ucred and pthread_setname_np are GNU extensions that the
   Glibc module does not show; these wrappers make them callable from Swift (Syscall.swift). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

static inline int hear_accept4(int fd, int flags) { return accept4(fd, 0, 0, flags); }
static inline int hear_pipe2(int fds[2], int flags) { return pipe2(fds, flags); }
/* The peer's uid through SO_PEERCRED, or -1 with errno set. */
static inline int hear_peer_uid(int fd, unsigned int *uid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    int result = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length);
    if (result == 0) *uid = credentials.uid;
    return result;
}
static inline int hear_set_thread_name(pthread_t thread, const char *name) { return pthread_setname_np(thread, name); }
#endif
