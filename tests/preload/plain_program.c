/* A program that knows nothing of CUDA, NCCL or the probe: LD_PRELOAD must not change it. */
#include <stdio.h>

int main(void) {
  printf("plain ok\n");
  return 0;
}
