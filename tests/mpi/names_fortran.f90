! Call sites in Fortran: the report must name them as the source does
! ("halo_mod::exchange", "plain_send", the program's name), not as
! gfortran's symbols ("__halo_mod_MOD_exchange", "plain_send_", "MAIN__").
! 30 sends from a module procedure, 20 from an external subroutine, 10 from
! the main program, each of one 1 KiB buffer.
module halo_mod
  use mpi
  implicit none
contains
  subroutine exchange(buf, inbuf, right, left, steps, total)
    double precision, intent(inout) :: buf(128), inbuf(128), total
    integer, intent(in) :: right, left, steps
    integer :: i, req, ierr
    do i = 1, steps
       buf(1) = i
       call MPI_Irecv(inbuf, 128, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, req, ierr)
       call MPI_Send(buf, 128, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, ierr)
       call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
       total = total + inbuf(1)
    end do
  end subroutine exchange
end module halo_mod

subroutine plain_send(buf, inbuf, right, left, steps, total)
  use mpi
  implicit none
  double precision :: buf(128), inbuf(128), total
  integer :: right, left, steps, i, req, ierr
  do i = 1, steps
     buf(2) = i
     call MPI_Irecv(inbuf, 128, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, req, ierr)
     call MPI_Send(buf, 128, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, ierr)
     call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
     total = total + inbuf(2)
  end do
end subroutine plain_send

program names_fortran
  use mpi
  use halo_mod
  implicit none
  integer :: ierr, rank, nranks, right, left, i, req
  double precision :: a(128), b(128), c(128), inbuf(128), total, grand

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  total = 0
  a = rank
  b = rank
  c = rank
  call exchange(a, inbuf, right, left, 30, total)
  call plain_send(b, inbuf, right, left, 20, total)
  do i = 1, 10
     c(3) = i
     call MPI_Irecv(inbuf, 128, MPI_DOUBLE_PRECISION, left, 3, MPI_COMM_WORLD, req, ierr)
     call MPI_Send(c, 128, MPI_DOUBLE_PRECISION, right, 3, MPI_COMM_WORLD, ierr)
     call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
     total = total + inbuf(3)
  end do
  call MPI_Reduce(total, grand, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, f14.1)', 'names_fortran total ', grand
  call MPI_Finalize(ierr)
end program names_fortran
