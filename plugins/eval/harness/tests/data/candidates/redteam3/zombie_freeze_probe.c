/* What zombie_leader_helper does to procs.freeze_tree, alone. Forks a helper whose
 * leader thread exits (its /proc/PID/stat then says "Z" for as long as its other threads
 * live, and procs._stopped counts "Z" as stopped) and whose worker thread counts in
 * shared memory; the helper starts three wake-ups: children sharing its memory whose
 * exit signal is SIGCONT, each killed by its own SIGKILL timer (after 300, 450 and
 * 600 ms). A stopped process still dies of SIGKILL, and the kernel's SIGCONT then
 * continues the helper. Prints "helper PID", then the counter every 50 ms for 2 s. */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

static volatile long* counter;
static char stacks[3][16384];

static int wake_up(void* arg) {
  long ms = (long)arg;
  struct sigevent event;
  memset(&event, 0, sizeof event);
  event.sigev_notify = SIGEV_SIGNAL;
  event.sigev_signo = SIGKILL;
  int timer = 0;
  syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer);
  struct itimerspec when;
  memset(&when, 0, sizeof when);
  when.it_value.tv_sec = ms / 1000;
  when.it_value.tv_nsec = (ms % 1000) * 1000000L;
  syscall(SYS_timer_settime, timer, 0, &when, NULL);
  for (;;) syscall(SYS_pause);
  return 0;
}

static void* count(void* unused) {
  (void)unused;
  for (;;) {
    __atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST);
    struct timespec pause = {0, 100000};
    nanosleep(&pause, NULL);
  }
  return NULL;
}

int main(void) {
  counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  pid_t helper = fork();
  if (helper == 0) {
    close(1);  /* the test reads stdout to its end */
    pthread_t worker;
    pthread_create(&worker, NULL, count, NULL);
    for (long i = 0; i < 3; ++i)
      clone(wake_up, stacks[i] + sizeof stacks[i], CLONE_VM | SIGCONT, (void*)(300 + 150 * i));
    syscall(SYS_exit, 0);
  }
  printf("helper %d\n", helper);
  fflush(stdout);
  for (int i = 0; i < 40; ++i) {
    printf("%ld\n", __atomic_load_n(counter, __ATOMIC_SEQ_CST));
    fflush(stdout);
    usleep(50000);
  }
  return 0;
}
