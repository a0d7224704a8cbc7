// Call sites in C++: the report must name them demangled, the way a C++
// programmer writes them ("halo::Exchanger::forward(int)"), not as the
// linker's symbol ("_ZN4halo9Exchanger7forwardEi").  60 sends of one 1 KiB
// buffer from a method, 40 from a template function; prints a digest of
// what was received.
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "digest.h"

namespace halo {

class Exchanger {
  public:
    Exchanger(int right, int left) : right_(right), left_(left), out_(128), in_(128) {}

    __attribute__((noinline)) unsigned long forward(int steps)
    {
        unsigned long h = DIGEST_INIT;
        for (int i = 0; i < steps; i++) {
            for (int k = 0; k < 128; k++)
                out_[k] = i * 1000.0 + k;
            MPI_Request r;
            MPI_Irecv(in_.data(), 128, MPI_DOUBLE, left_, 1, MPI_COMM_WORLD, &r);
            MPI_Send(out_.data(), 128, MPI_DOUBLE, right_, 1, MPI_COMM_WORLD);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            h = digest_more(h, in_.data(), 128 * sizeof(double));
        }
        return h;
    }

  private:
    int right_, left_;
    std::vector<double> out_, in_;
};

template <typename T>
__attribute__((noinline)) unsigned long send_many(int right, int left, int steps)
{
    std::vector<T> out(1024 / sizeof(T)), in(1024 / sizeof(T));
    unsigned long h = DIGEST_INIT;
    for (int i = 0; i < steps; i++) {
        out[0] = static_cast<T>(i);
        MPI_Request r;
        MPI_Irecv(in.data(), 1024, MPI_BYTE, left, 2, MPI_COMM_WORLD, &r);
        MPI_Send(out.data(), 1024, MPI_BYTE, right, 2, MPI_COMM_WORLD);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        h = digest_more(h, in.data(), 1024);
    }
    return h;
}

} // namespace halo

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    halo::Exchanger ex((rank + 1) % n, (rank + n - 1) % n);
    unsigned long h = ex.forward(60);
    h ^= halo::send_many<int>((rank + 1) % n, (rank + n - 1) % n, 40);
    std::vector<unsigned long> all_h(n);
    MPI_Gather(&h, 1, MPI_UNSIGNED_LONG, all_h.data(), 1, MPI_UNSIGNED_LONG, 0, MPI_COMM_WORLD);
    for (int r = 0; rank == 0 && r < n; r++) // in rank order
        std::printf("names_cxx rank %d digest %lx\n", r, all_h[r]);
    MPI_Finalize();
    return 0;
}
