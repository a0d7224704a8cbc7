! MPI_Alloc_mem / MPI_Free_mem from Fortran (mpi_f08, TYPE(C_PTR)): hotbuf
! binds them (shim/mem/: blocks of registered chunks where it can).  Ten
! rounds: a fresh block per round, filled, sent round the ring into
! another block, summed; output as without hotbuf.
program alloc_mem_f08
  use mpi_f08
  use, intrinsic :: iso_c_binding
  implicit none
  integer :: rank, nranks, right, left, i, round
  integer(kind=MPI_ADDRESS_KIND) :: bytes
  type(c_ptr) :: sp, rp
  double precision, pointer :: sbuf(:), rbuf(:)
  type(MPI_Request) :: req
  double precision :: total, grand

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  total = 0
  do round = 1, 10
     bytes = 8 * 1000 * round
     call MPI_Alloc_mem(bytes, MPI_INFO_NULL, sp)
     call MPI_Alloc_mem(bytes, MPI_INFO_NULL, rp)
     call c_f_pointer(sp, sbuf, [1000 * round])
     call c_f_pointer(rp, rbuf, [1000 * round])
     do i = 1, 1000 * round
        sbuf(i) = rank * 1000 + i + round
     end do
     call MPI_Irecv(rbuf, 1000 * round, MPI_DOUBLE_PRECISION, left, 5, MPI_COMM_WORLD, req)
     call MPI_Send(sbuf, 1000 * round, MPI_DOUBLE_PRECISION, right, 5, MPI_COMM_WORLD)
     call MPI_Wait(req, MPI_STATUS_IGNORE)
     total = total + sum(rbuf)
     call MPI_Free_mem(rbuf)
     call MPI_Free_mem(sbuf)
  end do
  call MPI_Reduce(total, grand, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD)
  if (rank == 0) print '(a, f20.1)', 'alloc_mem_f08 total ', grand
  call MPI_Finalize()
end program alloc_mem_f08
