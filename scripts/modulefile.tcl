#%Module1.0
##
## hotbuf @VERSION@: buffer-reuse profile and RDMA rerouting for MPI jobs.
## Installed by `make install` (scripts/modulefile.tcl, PREFIX filled in).
## Tcl, so that both Environment Modules and Lmod read it:
##   module use @PREFIX@/share/modulefiles; module load hotbuf
##
## It only puts hotbuf-run (and hotbuf-report) on PATH and the man pages on
## MANPATH: LD_PRELOAD is for the ranks alone, and hotbuf-run sets it there.

proc ModulesHelp { } {
    puts stderr "hotbuf @VERSION@: run an MPI job with hotbuf preloaded on every rank:"
    puts stderr "  hotbuf-run \[options\] -- mpirun|mpiexec|srun ... ./app"
    puts stderr "See hotbuf-run --help, man hotbuf-run, man hotbuf."
}

module-whatis "hotbuf @VERSION@: buffer-reuse profile and RDMA rerouting for MPI jobs (LD_PRELOAD)"

conflict hotbuf

set prefix @PREFIX@
prepend-path PATH $prefix/bin
# The trailing empty element keep man's default search path when MANPATH
# was unset (an empty element means "the system's path").
prepend-path MANPATH $prefix/share/man
append-path MANPATH {}
setenv HOTBUF_ROOT $prefix
