! The receive side through `use mpi` (mpif.h's entry points), 2 ranks:
! Recv, Sendrecv(_replace), Irecv with every Wait/Test form (Fortran
! indices count from 1: Waitany/Testany/Waitsome/Testsome with null
! requests placed so the index is known), MPI_STATUS(ES)_IGNORE,
! Request_get_status, persistent receives, Probe/Iprobe, Mprobe/Mrecv and
! Improbe/Imrecv (INTEGER message handles), Cancel of a receive, MPI_TAG_UB
! (Comm_get_attr and Attr_get), Comm_free and Comm_disconnect.  Rank 0
! prints every rank's results: identical with and without hotbuf
! (tests/run-tests.sh p2p_recv_f, p2p_route_f).
module p2p_recv_f_log
  implicit none
  integer, parameter :: nres = 200
  integer :: res(nres), nr = 0
contains
  subroutine add(v)
    integer, intent(in) :: v
    nr = nr + 1
    res(nr) = v
  end subroutine add
end module p2p_recv_f_log

program p2p_recv_f
  use mpi
  use p2p_recv_f_log
  implicit none
  integer :: rank, nranks, peer, ierr, i, t, cnt, idx, outcount, msg
  integer :: buf(64), a(64), b(64), sbuf(64)
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 3), r(3), indices(3)
  integer :: allres(nres, 2), ival
  integer(kind=MPI_ADDRESS_KIND) :: aval
  integer :: dup
  logical :: flag, cancelled

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  if (nranks /= 2) call MPI_Abort(MPI_COMM_WORLD, 2, ierr)
  peer = 1 - rank

  ! Blocking: any source / any tag with a status, then STATUS_IGNORE.
  call send_tags(1, 2, 8)
  call MPI_Recv(buf, 64, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
  call status_add(st)
  call add(sum(buf(1:8)))
  call MPI_Recv(buf, 64, MPI_INTEGER, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call add(sum(buf(1:8)))
  sbuf(1:5) = [(rank * 10 + i, i = 1, 5)]
  call MPI_Sendrecv(sbuf, 5, MPI_INTEGER, peer, 3, buf, 64, MPI_INTEGER, peer, 3, &
                    MPI_COMM_WORLD, st, ierr)
  call status_add(st)
  call add(sum(buf(1:5)))
  buf(1:6) = [(rank * 20 + i, i = 1, 6)]
  call MPI_Sendrecv_replace(buf, 6, MPI_INTEGER, peer, 4, peer, 4, MPI_COMM_WORLD, st, ierr)
  call status_add(st)
  call add(sum(buf(1:6)))

  ! Wait, Test, Request_get_status.
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 10, MPI_COMM_WORLD, r(1), ierr)
  call send_tags(10, 1, 3)
  call MPI_Wait(r(1), st, ierr)
  call status_add(st)
  call add(merge(1, 0, r(1) == MPI_REQUEST_NULL))
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 11, MPI_COMM_WORLD, r(1), ierr)
  call send_tags(11, 1, 4)
  flag = .false.
  do while (.not. flag)
     call MPI_Test(r(1), flag, st, ierr)
  end do
  call status_add(st)
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 12, MPI_COMM_WORLD, r(1), ierr)
  call send_tags(12, 1, 5)
  flag = .false.
  do while (.not. flag)
     call MPI_Request_get_status(r(1), flag, st, ierr)
  end do
  call status_add(st)
  call add(merge(1, 0, r(1) /= MPI_REQUEST_NULL))
  call MPI_Wait(r(1), MPI_STATUS_IGNORE, ierr)

  ! Waitall with statuses, Testall with MPI_STATUSES_IGNORE.
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 13, MPI_COMM_WORLD, r(1), ierr)
  call MPI_Irecv(b, 64, MPI_INTEGER, peer, 14, MPI_COMM_WORLD, r(2), ierr)
  call MPI_Irecv(buf, 64, MPI_INTEGER, MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, r(3), ierr)
  call send_tags(13, 3, 6)
  call MPI_Waitall(3, r, sts, ierr)
  do i = 1, 3
     call status_add(sts(:, i))
  end do
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 16, MPI_COMM_WORLD, r(1), ierr)
  call MPI_Irecv(b, 64, MPI_INTEGER, peer, 17, MPI_COMM_WORLD, r(2), ierr)
  call send_tags(16, 2, 7)
  flag = .false.
  do while (.not. flag)
     call MPI_Testall(2, r, flag, MPI_STATUSES_IGNORE, ierr)
  end do
  call add(sum(b(1:7)))

  ! Waitany / Testany: the null request first, so the index is 2.
  r(1) = MPI_REQUEST_NULL
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 18, MPI_COMM_WORLD, r(2), ierr)
  call send_tags(18, 1, 2)
  call MPI_Waitany(2, r, idx, st, ierr)
  call add(idx)
  call status_add(st)
  call MPI_Waitany(2, r, idx, st, ierr)
  call add(undefined(idx))
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 19, MPI_COMM_WORLD, r(2), ierr)
  call send_tags(19, 1, 2)
  flag = .false.
  do while (.not. flag)
     call MPI_Testany(2, r, idx, flag, MPI_STATUS_IGNORE, ierr)
  end do
  call add(idx)
  call MPI_Testany(2, r, idx, flag, st, ierr)
  call add(merge(1, 0, flag))
  call add(undefined(idx))

  ! Waitsome [null, r, r] and Testsome [r, null, r]: which indices.
  r(1) = MPI_REQUEST_NULL
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 20, MPI_COMM_WORLD, r(2), ierr)
  call MPI_Irecv(b, 64, MPI_INTEGER, peer, 21, MPI_COMM_WORLD, r(3), ierr)
  call send_tags(20, 2, 3)
  cnt = 0
  do
     call MPI_Waitsome(3, r, outcount, indices, sts, ierr)
     if (outcount == MPI_UNDEFINED) exit
     do i = 1, outcount
        cnt = cnt + indices(i) * 10 + sts(MPI_TAG, i)
     end do
  end do
  call add(cnt)
  call MPI_Irecv(a, 64, MPI_INTEGER, peer, 22, MPI_COMM_WORLD, r(1), ierr)
  r(2) = MPI_REQUEST_NULL
  call MPI_Irecv(b, 64, MPI_INTEGER, peer, 23, MPI_COMM_WORLD, r(3), ierr)
  call send_tags(22, 2, 3)
  cnt = 0
  do
     call MPI_Testsome(3, r, outcount, indices, MPI_STATUSES_IGNORE, ierr)
     if (outcount == MPI_UNDEFINED) exit
     do i = 1, outcount
        cnt = cnt + indices(i) * 100
     end do
  end do
  call add(cnt)

  ! Persistent: Recv_init + Start, Recv_init + Send_init + Startall.
  call MPI_Recv_init(a, 64, MPI_INTEGER, peer, 30, MPI_COMM_WORLD, r(1), ierr)
  call MPI_Recv_init(b, 64, MPI_INTEGER, MPI_ANY_SOURCE, 31, MPI_COMM_WORLD, r(2), ierr)
  call MPI_Send_init(sbuf, 4, MPI_INTEGER, peer, 31, MPI_COMM_WORLD, r(3), ierr)
  do t = 1, 3
     call MPI_Start(r(1), ierr)
     call send_tags(30, 1, 3 + t)
     call MPI_Wait(r(1), st, ierr)
     call status_add(st)
     sbuf(1:4) = [(rank * 100 + t * 10 + i, i = 1, 4)]
     call MPI_Startall(2, r(2:3), ierr)
     call MPI_Waitall(2, r(2:3), sts, ierr)
     call status_add(sts(:, 1))
     call add(sum(b(1:4)))
  end do
  do i = 1, 3
     call MPI_Request_free(r(i), ierr)
  end do
  call add(merge(1, 0, r(1) == MPI_REQUEST_NULL))

  ! Probes, matched probes and INTEGER message handles.
  call send_tags(40, 4, 9)
  call MPI_Probe(peer, 40, MPI_COMM_WORLD, st, ierr)
  call status_add(st)
  call MPI_Recv(buf, 64, MPI_INTEGER, peer, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  flag = .false.
  do while (.not. flag)
     call MPI_Iprobe(MPI_ANY_SOURCE, 41, MPI_COMM_WORLD, flag, st, ierr)
  end do
  call status_add(st)
  call MPI_Recv(buf, 64, MPI_INTEGER, peer, 41, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  call MPI_Mprobe(peer, MPI_ANY_TAG, MPI_COMM_WORLD, msg, st, ierr)
  call status_add(st)
  call MPI_Mrecv(buf, 64, MPI_INTEGER, msg, st, ierr)
  call status_add(st)
  call add(sum(buf(1:9)))
  call add(merge(1, 0, msg == MPI_MESSAGE_NULL))
  flag = .false.
  do while (.not. flag)
     call MPI_Improbe(peer, 43, MPI_COMM_WORLD, flag, msg, st, ierr)
  end do
  call status_add(st)
  call MPI_Imrecv(buf, 64, MPI_INTEGER, msg, r(1), ierr)
  call MPI_Wait(r(1), st, ierr)
  call status_add(st)
  call add(sum(buf(1:9)))

  ! Cancel of a receive nobody sends to.
  call MPI_Irecv(buf, 64, MPI_INTEGER, peer, 999, MPI_COMM_WORLD, r(1), ierr)
  call MPI_Cancel(r(1), ierr)
  call MPI_Wait(r(1), st, ierr)
  call MPI_Test_cancelled(st, cancelled, ierr)
  call add(merge(1, 0, cancelled))

  ! Communicators.
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  buf(1:3) = [(rank * 50 + i, i = 1, 3)]
  call MPI_Sendrecv_replace(buf, 3, MPI_INTEGER, peer, 5, peer, 5, dup, st, ierr)
  call status_add(st)
  call MPI_Comm_free(dup, ierr)
  call add(merge(1, 0, dup == MPI_COMM_NULL))
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
  call MPI_Comm_disconnect(dup, ierr)
  call add(merge(1, 0, dup == MPI_COMM_NULL))

  call MPI_Gather(res, nres, MPI_INTEGER, allres, nres, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  ! MPI_TAG_UB, both queries (printed by rank 0 only: the same everywhere).
  call MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, aval, flag, ierr)
  call MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, ival, flag, ierr)
  if (rank == 0) then
     do i = 1, 2
        print '(a, i0, a, i0)', '== rank ', i - 1, ' results ', nr
        print '(8i12)', allres(1:nr, i)
     end do
     print '(a, i0)', 'tag_ub ', aval
     print '(a, i0)', 'tag_ub ', ival
  end if
  call MPI_Finalize(ierr)

contains
  ! An index of all-null Waitany/Testany: MPI_UNDEFINED.  MPICH 4.0.2's own
  ! Fortran binding returns MPI_UNDEFINED + 1 (it adds one unconditionally);
  ! hotbuf's returns MPI_UNDEFINED.  Both print as -99, any other value as is.
  integer function undefined(i)
    integer, intent(in) :: i
    undefined = merge(-99, i, i == MPI_UNDEFINED .or. i == MPI_UNDEFINED + 1)
  end function undefined

  subroutine send_tags(first, n, len)
    integer, intent(in) :: first, n, len
    integer :: tg, j, sb(64)
    do tg = first, first + n - 1
       sb(1:len) = [(tg * 1000 + j, j = 1, len)]
       call MPI_Send(sb, len, MPI_INTEGER, peer, tg, MPI_COMM_WORLD, ierr)
    end do
  end subroutine send_tags

  subroutine status_add(s)
    integer, intent(in) :: s(MPI_STATUS_SIZE)
    integer :: c
    call MPI_Get_count(s, MPI_INTEGER, c, ierr)
    call add(s(MPI_SOURCE))
    call add(s(MPI_TAG))
    call add(c)
  end subroutine status_add
end program p2p_recv_f
