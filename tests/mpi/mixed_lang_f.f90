! The Fortran (`use mpi`) half of the MPMD job of mixed_lang.c: the same
! sequence of calls, data and checks (see there).  Rank 0 (C) prints.
module mixed_f
  use mpi
  implicit none
  integer, parameter :: iters = 12, small = 16, large = 16384, wsize = 256, nres = 10
  integer :: rank, peer, res(nres)
contains
  integer function pat(r, it, i)
    integer, intent(in) :: r, it, i
    pat = r * 1000000 + it * 20000 + i
  end function pat

  subroutine fill(p, n, r, it)
    integer, intent(in) :: n, r, it
    integer, intent(out) :: p(0:n - 1)
    integer :: i
    do i = 0, n - 1
       p(i) = pat(r, it, i)
    end do
  end subroutine fill

  integer function wrong(p, n, r, it)
    integer, intent(in) :: n, r, it, p(0:n - 1)
    integer :: i
    wrong = 0
    do i = 0, n - 1
       if (p(i) /= pat(r, it, i)) wrong = wrong + 1
    end do
  end function wrong

  ! Buffers are passed as their first element: MPICH's `use mpi` has no
  ! interface for choice buffers, and gfortran wants one rank per routine.
  subroutine allgathers()
    ! On the heap: a static array may share its first page with the
    ! program's file-backed data, which hotbuf cannot register (then its
    ! zero-copy Allgather aborts the job, and Put/Get stay on MPI).
    integer, allocatable, save :: send(:), recv(:)
    integer :: it, r, i, ierr
    integer(kind=8) :: sum
    allocate(send(0:large - 1), recv(0:2 * large - 1))
    do it = 1, iters
       call fill(send, small, rank, it)
       call MPI_Allgather(send(0), small, MPI_INTEGER, recv(0), small, MPI_INTEGER, &
                          MPI_COMM_WORLD, ierr)
       do r = 0, 1
          res(1) = res(1) + wrong(recv(r * small:), small, r, it)
       end do
       call fill(send, large, rank, it)
       call MPI_Allgather(send(0), large, MPI_INTEGER, recv(0), large, MPI_INTEGER, &
                          MPI_COMM_WORLD, ierr)
       do r = 0, 1
          res(2) = res(2) + wrong(recv(r * large:), large, r, it)
       end do
       call fill(recv(rank * small:), small, rank, it + 50)
       call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv(0), small, &
                          MPI_INTEGER, MPI_COMM_WORLD, ierr)
       do r = 0, 1
          res(3) = res(3) + wrong(recv(r * small:), small, r, it + 50)
       end do
    end do
    sum = 0
    do i = 0, 2 * large - 1
       sum = mod(sum + int(recv(i), 8) * (mod(i, 7) + 1), 1000003_8)
    end do
    res(9) = int(sum)
    deallocate(send, recv)
  end subroutine allgathers

  ! Put mine into the peer's window, then Get it back, in fence epochs.
  subroutine fence_epochs(win, mem, first, base)
    integer, intent(in) :: win, first, base
    integer, volatile :: mem(0:)
    integer, allocatable, save, volatile :: obuf(:), gbuf(:) ! on the heap (see allgathers)
    integer(kind=MPI_ADDRESS_KIND), parameter :: disp = 0
    integer :: it, ierr
    if (.not. allocated(obuf)) allocate(obuf(0:wsize - 1), gbuf(0:wsize - 1))
    call MPI_Win_fence(0, win, ierr)
    do it = 1, iters
       call fill(obuf, wsize, rank, base + it)
       call MPI_Put(obuf, wsize, MPI_INTEGER, peer, disp, wsize, MPI_INTEGER, win, ierr)
       call MPI_Win_fence(0, win, ierr)
       res(first) = res(first) + wrong(mem, wsize, peer, base + it)
       call MPI_Get(gbuf, wsize, MPI_INTEGER, peer, disp, wsize, MPI_INTEGER, win, ierr)
       call MPI_Win_fence(0, win, ierr)
       res(first + 1) = res(first + 1) + wrong(gbuf, wsize, rank, base + it)
    end do
  end subroutine fence_epochs

  subroutine lock_epochs(win)
    integer, intent(in) :: win
    integer, allocatable, save, volatile :: obuf(:), gbuf(:) ! on the heap (see allgathers)
    integer(kind=MPI_ADDRESS_KIND), parameter :: disp = 0
    integer :: it, ierr
    if (.not. allocated(obuf)) allocate(obuf(0:wsize - 1), gbuf(0:wsize - 1))
    do it = 1, iters
       call fill(obuf, wsize, rank, 100 + it)
       call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win, ierr)
       call MPI_Put(obuf, wsize, MPI_INTEGER, peer, disp, wsize, MPI_INTEGER, win, ierr)
       call MPI_Win_unlock(peer, win, ierr)
       call MPI_Barrier(MPI_COMM_WORLD, ierr)
       call MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win, ierr)
       call MPI_Get(gbuf, wsize, MPI_INTEGER, peer, disp, wsize, MPI_INTEGER, win, ierr)
       call MPI_Win_unlock(peer, win, ierr)
       res(6) = res(6) + wrong(gbuf, wsize, rank, 100 + it)
       call MPI_Barrier(MPI_COMM_WORLD, ierr)
    end do
  end subroutine lock_epochs

  subroutine windows()
    use, intrinsic :: iso_c_binding, only : c_ptr, c_f_pointer
    integer, allocatable, target, volatile :: mem(:)
    integer, pointer, contiguous, volatile :: amem(:)
    integer(kind=MPI_ADDRESS_KIND) :: bytes, baseptr
    type(c_ptr) :: cptr
    integer :: win, ierr
    allocate(mem(0:wsize - 1))
    bytes = wsize * 4
    call MPI_Win_create(mem, bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
    call fence_epochs(win, mem, 4, 0)
    call MPI_Win_fence(0, win, ierr)
    call lock_epochs(win)
    call MPI_Win_free(win, ierr)
    deallocate(mem)
    call MPI_Win_allocate(bytes, 4, MPI_INFO_NULL, MPI_COMM_WORLD, baseptr, win, ierr)
    cptr = transfer(baseptr, cptr)
    call c_f_pointer(cptr, amem, [wsize])
    call fence_epochs(win, amem, 7, 200)
    call MPI_Win_fence(0, win, ierr)
    call MPI_Win_free(win, ierr)
  end subroutine windows
end module mixed_f

program mixed_lang_f
  use mixed_f
  implicit none
  integer :: size, ierr, all(nres * 2)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  if (size /= 2) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  peer = 1 - rank
  res = 0
  res(10) = 1
  call allgathers()
  call windows()
  call MPI_Gather(res, nres, MPI_INTEGER, all, nres, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program mixed_lang_f
