! A Fortran program: its MPI calls must appear in hotbuf's report (Open MPI's
! Fortran bindings call PMPI_* directly, past any C MPI_Send wrapper).
! One 2 KiB buffer sent 100 times to the right neighbour, one Allgather.
program fortran_send
  use mpi
  implicit none
  integer :: ierr, rank, nranks, right, left, i, req
  double precision :: buf(256), inbuf(256), total, grand, mine(4)
  double precision, allocatable :: all(:)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  total = 0
  do i = 1, 100
     buf = rank * 1000 + i
     call MPI_Irecv(inbuf, 256, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, req, ierr)
     call MPI_Send(buf, 256, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, ierr)
     call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
     total = total + inbuf(1)
  end do
  allocate(all(4 * nranks))
  mine = rank
  call MPI_Allgather(mine, 4, MPI_DOUBLE_PRECISION, all, 4, MPI_DOUBLE_PRECISION, &
                     MPI_COMM_WORLD, ierr)
  total = total + sum(all)
  call MPI_Reduce(total, grand, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, f14.1)', 'fortran_send total ', grand
  call MPI_Finalize(ierr)
end program fortran_send
