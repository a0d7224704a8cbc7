! Communicator constructors from Fortran (the generated bindings of
! pmpi/mpi_calls.def's constructor rows: out handles, INTEGER and LOGICAL
! arrays, MPI_UNWEIGHTED): what MPI says of each new communicator (size,
! sum of world ranks, neighbour counts) must be the same with and without
! hotbuf.
program fortran_comms
  use mpi
  implicit none
  integer :: ierr, rank, nranks, d, sp, cart, sub, dga, inter, merged, half
  integer :: dims(2), src(1), dst(1), indeg, outdeg
  logical :: wflag
  logical :: periods(2), remain(2)

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)

  call MPI_Comm_dup(MPI_COMM_WORLD, d, ierr)
  call show('dup', d)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), -rank, sp, ierr)
  call show('split', sp)
  dims = 0
  call MPI_Dims_create(nranks, 2, dims, ierr)
  periods = (/ .true., .false. /)
  call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., cart, ierr)
  call show('cart', cart)
  remain = (/ .true., .false. /)
  call MPI_Cart_sub(cart, remain, sub, ierr)
  call show('cart_sub', sub)
  src(1) = mod(rank + nranks - 1, nranks)
  dst(1) = mod(rank + 1, nranks)
  call MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, &
       1, dst, MPI_UNWEIGHTED, MPI_INFO_NULL, .false., dga, ierr)
  call show('dgraph_adj', dga)
  call MPI_Dist_graph_neighbors_count(dga, indeg, outdeg, wflag, ierr)
  if (rank == 0) print '(a,2i3,l2)', 'dgraph_adj neighbours', indeg, outdeg, wflag
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - mod(rank, 2), 5, inter, ierr)
  call MPI_Intercomm_merge(inter, mod(rank, 2) == 1, merged, ierr)
  call show('merged', merged)
  call MPI_Comm_free(d, ierr)
  call MPI_Finalize(ierr)

contains

  subroutine show(label, comm)
    character(len=*), intent(in) :: label
    integer, intent(in) :: comm
    integer :: n, s, e
    call MPI_Comm_size(comm, n, e)
    call MPI_Allreduce(rank, s, 1, MPI_INTEGER, MPI_SUM, comm, e)
    if (rank == 0) print '(a,a,i3,a,i4)', label, ': size', n, ', world ranks sum', s
  end subroutine show
end program fortran_comms
