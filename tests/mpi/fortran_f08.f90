! The mpi_f08 module: Open MPI routes it through ompi_send_f (past any C
! wrapper), MPICH through its C MPI_Send.  50 sends of one 1 KiB buffer.
program fortran_f08
  use mpi_f08
  implicit none
  integer :: rank, nranks, right, left, i
  type(MPI_Request) :: req
  double precision :: buf(128), inbuf(128), total, grand

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  total = 0
  do i = 1, 50
     buf = rank * 100 + i
     call MPI_Irecv(inbuf, 128, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, req)
     call MPI_Send(buf, 128, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD)
     call MPI_Wait(req, MPI_STATUS_IGNORE)
     total = total + inbuf(1)
  end do
  call MPI_Reduce(total, grand, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) print '(a, f14.1)', 'fortran_f08 total ', grand
  call MPI_Finalize()
end program fortran_f08
