/* cma: two MPI ranks that exchange one large message over Open MPI's shared-memory transport,
 * so that the single-copy mechanism (CMA: process_vm_readv, kernel.md §A.4) is used.
 *
 * Each rank prints "rank R pid P size N" after MPI_Init and then blocks reading one byte from
 * the FIFO named by argv[1], so a tracer can attach and measure the access matrix while the
 * ranks wait; the test writes one byte per rank. Then rank 0 and rank 1 swap NBYTES bytes with
 * MPI_Sendrecv and each prints "rank R exchange ok" when the received data is right. When CMA
 * is refused by the kernel, Open MPI itself reports it (btl/vader: "Read -1, expected N,
 * errno = 1"; smsc/cma: its verbose output) and the exchange fails or aborts.
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBYTES (4 << 20)

int main(int argc, char **argv) {
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 2 || size != 2) {
		fprintf(stderr, "usage: mpirun -np 2 cma FIFO\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	printf("rank %d pid %d size %d\n", rank, (int)getpid(), size);
	fflush(stdout);

	int fd = open(argv[1], O_RDONLY);
	char go;
	if (fd < 0 || read(fd, &go, 1) != 1) {
		perror("cma: gate");
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	close(fd);

	unsigned char *out = malloc(NBYTES), *in = malloc(NBYTES);
	for (int i = 0; i < NBYTES; i++)
		out[i] = (unsigned char)(i * 7 + rank);
	memset(in, 0, NBYTES);
	int other = 1 - rank;
	MPI_Sendrecv(out, NBYTES, MPI_BYTE, other, 0, in, NBYTES, MPI_BYTE, other, 0, MPI_COMM_WORLD,
	             MPI_STATUS_IGNORE);
	for (int i = 0; i < NBYTES; i++) {
		if (in[i] != (unsigned char)(i * 7 + other)) {
			printf("rank %d exchange corrupt at %d\n", rank, i);
			fflush(stdout);
			MPI_Abort(MPI_COMM_WORLD, 4);
		}
	}
	printf("rank %d exchange ok\n", rank);
	fflush(stdout);
	MPI_Finalize();
	return 0;
}
