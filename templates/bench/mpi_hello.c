/* ibtool bench check: a real MPI job across hosts: every rank reports its host, and an
 * Allreduce over all ranks proves they talk to each other. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, len, sum = 0, one = 1;
	char host[MPI_MAX_PROCESSOR_NAME];

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &len);
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("ibtool-mpi-hello rank %d of %d on %s allreduce %d\n", rank, size, host, sum);
	MPI_Finalize();
	return sum == size ? 0 : 1;
}
