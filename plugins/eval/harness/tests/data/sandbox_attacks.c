// The sandbox attacks again, from native code: what a C++ candidate (or any library
// holding the GIL, which no Python-level check ever sees) can do. test_sandbox.py builds
// this into a shared library and calls it through ctypes. Each function returns 0 when
// the attack worked, else the errno that stopped it.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

int attack_unshare_user(void) { return unshare(CLONE_NEWUSER) == 0 ? 0 : errno; }

int attack_clone_new_user(void) {
  long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid < 0) return errno;
  waitpid((pid_t)pid, 0, 0);
  return 0;
}

// A file system type that does not exist: harmless where the call is allowed (ENODEV).
int attack_mount(const char* dir) { return mount("none", dir, "kforge-no-such-fs", 0, 0) == 0 ? 0 : errno; }

int attack_ptrace(int pid) {
  if (ptrace(PTRACE_SEIZE, pid, 0, 0) != 0) return errno;
  ptrace(PTRACE_DETACH, pid, 0, 0);
  return 0;
}

int attack_read_memory(int pid, unsigned long address, char* out, int length) {
  struct iovec local = {out, (size_t)length};
  struct iovec remote = {(void*)address, (size_t)length};
  return process_vm_readv(pid, &local, 1, &remote, 1, 0) == length ? 0 : errno;
}

int attack_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return errno;
  struct sockaddr_in address;
  memset(&address, 0, sizeof address);
  address.sin_family = AF_INET;
  address.sin_port = htons((unsigned short)port);
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int result = connect(fd, (struct sockaddr*)&address, sizeof address) == 0 ? 0 : errno;
  close(fd);
  return result;
}

int attack_setns(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return errno;
  int result = setns(fd, 0) == 0 ? 0 : errno;
  close(fd);
  return result;
}

int attack_read_file(const char* path, char* out, int length) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return errno;
  ssize_t got = read(fd, out, (size_t)length);
  int result = got < 0 ? errno : 0;
  close(fd);
  return result;
}

int attack_write_file(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return errno;
  int result = write(fd, "poisoned", 8) == 8 ? 0 : errno;
  close(fd);
  return result;
}

// Forks up to `limit` children that wait for their parent's death; returns how many.
int attack_fork_bomb(int limit) {
  int born = 0;
  for (; born < limit; ++born) {
    pid_t pid = fork();
    if (pid < 0) break;
    if (pid == 0) {
      for (;;) pause();
    }
  }
  return born;
}
