# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Cython kernels of the data path: ``X^T z`` of float32 data in float64, and
the column statistics of the scan.

The NumPy twin is :mod:`neurospca._kernels._numpy_products`; the tests check
they agree; :func:`neurospca._kernels.load` chooses. No validation here: the
caller (:mod:`neurospca.decomposition._data`) passes a column tile of a row
block (rows strided, columns contiguous).

Every product and sum is computed in double from the float32 values (exact
conversions), so the result has float64 accuracy, as converting the tile to
float64 and calling BLAS would, without writing that float64 copy: the tile
is read once, four rows at a time, and ``out`` (the tile's columns of the
float64 accumulator) stays in cache. ``column_stats`` and ``column_m2`` are
the scan's two reads of a tile (sums, minima, maxima; centred sums of
squares), float64 accumulators per column.

The inner loops are C (below), compiled twice where GCC supports function
multi-versioning (x86-64 with glibc's ifunc resolver): for AVX2 (four doubles
per instruction, chosen at load time on CPUs that have it) and for the
baseline. AVX2 without
FMA: every product and sum is the same IEEE operation in both, so the two
give the same bits (the loops run over independent columns; nothing is
reassociated).

The fused pass of one vector (``fused_exact``: ``z = B v - shift`` and
``B^T z``, float64 arithmetic, eight rows read once for both) and the
start's 8-column products (``matmat8``, ``rmatmat8``: float32 products
summed in float32 registers per chunk, chunks added in float64) use AVX-512
intrinsics where the CPU has them (:data:`FAST`; else plain loops, and the
data path keeps BLAS), chosen at load time (issue 22, round 13).

``scan_tile`` is the scan's whole work on a tile in one call (issue 22, round
18): ``column_moments`` by chunks of 1 MB, then Chan's merge into the running
statistics, here rather than in NumPy; its float32 chunks take AVX-512 where
the CPU has it (no contraction into FMAs: the bits of the plain loops).

Size: about 790 lines, the data path's C kernels and their wrappers in one
module (one compiled extension, one NumPy twin).
"""

from cython cimport floating
from libc.math cimport INFINITY


cdef extern from *:
    """
    #include <math.h>
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__GLIBC__)
    #define NSP_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define NSP_CLONES
    #endif

    NSP_CLONES static void nsp_rmatvec_exact(const float *B, Py_ssize_t rs, Py_ssize_t n,
                                             Py_ssize_t p, const double *z, double *acc)
    {
        Py_ssize_t i = 0, j;
        for (; i + 4 <= n; i += 4) {
            const float *r0 = B + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
            double z0 = z[i], z1 = z[i + 1], z2 = z[i + 2], z3 = z[i + 3];
            for (j = 0; j < p; j++)
                acc[j] += (z0 * (double)r0[j] + z1 * (double)r1[j])
                          + (z2 * (double)r2[j] + z3 * (double)r3[j]);
        }
        for (; i < n; i++) {
            const float *r0 = B + i * rs;
            double z0 = z[i];
            for (j = 0; j < p; j++)
                acc[j] += z0 * (double)r0[j];
        }
    }

    #define NSP_STATS(NAME, T)                                                          \
    NSP_CLONES static void NAME(const T *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0, \
                                Py_ssize_t j1, double *s, double *lo, double *hi)        \
    {                                                                                   \
        Py_ssize_t i = 0, j;                                                            \
        double x0, x1, x2, x3, a, b;                                                    \
        for (j = j0; j < j1; j++) { s[j] = 0.0; lo[j] = INFINITY; hi[j] = -INFINITY; }  \
        for (; i + 4 <= n; i += 4) {                                                    \
            const T *r0 = T0 + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;      \
            for (j = j0; j < j1; j++) {                                                 \
                x0 = (double)r0[j]; x1 = (double)r1[j];                                 \
                x2 = (double)r2[j]; x3 = (double)r3[j];                                 \
                s[j] += (x0 + x1) + (x2 + x3);                                          \
                a = x0 < x1 ? x0 : x1; b = x2 < x3 ? x2 : x3; a = a < b ? a : b;        \
                lo[j] = a < lo[j] ? a : lo[j];                                          \
                a = x0 > x1 ? x0 : x1; b = x2 > x3 ? x2 : x3; a = a > b ? a : b;        \
                hi[j] = a > hi[j] ? a : hi[j];                                          \
            }                                                                           \
        }                                                                               \
        for (; i < n; i++) {                                                            \
            const T *r0 = T0 + i * rs;                                                  \
            for (j = j0; j < j1; j++) {                                                 \
                x0 = (double)r0[j];                                                     \
                s[j] += x0;                                                             \
                lo[j] = x0 < lo[j] ? x0 : lo[j];                                        \
                hi[j] = x0 > hi[j] ? x0 : hi[j];                                        \
            }                                                                           \
        }                                                                               \
    }

    #define NSP_M2(NAME, T)                                                             \
    NSP_CLONES static void NAME(const T *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0, \
                                Py_ssize_t j1, const double *mean, double *m2)          \
    {                                                                                   \
        Py_ssize_t i = 0, j;                                                            \
        double d0, d1, d2, d3, mj;                                                      \
        for (j = j0; j < j1; j++) m2[j] = 0.0;                                          \
        for (; i + 4 <= n; i += 4) {                                                    \
            const T *r0 = T0 + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;      \
            for (j = j0; j < j1; j++) {                                                 \
                mj = mean[j];                                                           \
                d0 = (double)r0[j] - mj; d1 = (double)r1[j] - mj;                       \
                d2 = (double)r2[j] - mj; d3 = (double)r3[j] - mj;                       \
                m2[j] += (d0 * d0 + d1 * d1) + (d2 * d2 + d3 * d3);                     \
            }                                                                           \
        }                                                                               \
        for (; i < n; i++) {                                                            \
            const T *r0 = T0 + i * rs;                                                  \
            for (j = j0; j < j1; j++) { d0 = (double)r0[j] - mean[j]; m2[j] += d0 * d0; } \
        }                                                                               \
    }

    /* Products of float32 rows with 8 float32 columns (the start's sketch
       and Gram passes, issue 22 round 13): Y += B W and G += B^T Y, float32
       products summed in float32 registers over chunks of NSP_W8_CHUNK
       columns (B W) or rows (B^T Y), each chunk's sum then added into the
       float64 result. With AVX-512 (chosen at load time); else plain loops
       (AVX2 with FMA ran at OpenBLAS's speed, so the callers then keep BLAS:
       see FAST). */
    #define NSP_W8_CHUNK 256
    #define NSP_XW_PAIRS 256
    #define NSP_XW_TILE (8 * NSP_XW_PAIRS)
    #if defined(__GNUC__) && defined(__x86_64__)
    #include <immintrin.h>
    #include <string.h>
    #define NSP_HAVE_FMA8 1
    /* AVX-512: 16 products per instruction (B W: 8 rows, 2 columns of B by
       the 8 of W; B^T Y: 32 columns of B by the 8 of Y). */
        static inline double nsp_load_pair(const float *x)
    {
        double d;
        memcpy(&d, x, sizeof d);
        return d;
    }
    #define NSP_PAIR(x) _mm512_castpd_ps(_mm512_set1_pd(nsp_load_pair(x)))
    __attribute__((target("avx512f")))
    static void nsp_xw8_512(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                            const float *Wi, double *Y, Py_ssize_t ly)
    {
        /* Wi: W's rows in pairs, interleaved: Wi[16 h + 2 k + e] = W[2 h + e, k]
           (p rounded up to even, zero-padded); a pair of B's columns is one
           64-bit broadcast, so each FMA takes 2 columns x 8 products. */
        Py_ssize_t i, h, h0, h1, r, k, m, t0, t1, q = p / 2;
        float t[16];
        /* Column tiles of NSP_XW_TILE pairs (a multiple of the chunk), every
           row of the block per tile: W's tile stays in the L2 cache (at P =
           327,684 the whole W is 10 MB, read again per 8 rows without the
           tiles, issue 22 round 14). Each y[k] receives its chunks' sums in
           the same order as without tiles: the same bits. */
        for (t0 = 0; t0 < q; t0 += NSP_XW_TILE)
        for (i = 0; i < n; i += 8) {
            m = n - i < 8 ? n - i : 8;
            t1 = t0 + NSP_XW_TILE < q ? t0 + NSP_XW_TILE : q;
            for (h0 = t0; h0 < t1; h0 += NSP_XW_PAIRS) {
                __m512 a[8];
                h1 = h0 + NSP_XW_PAIRS < t1 ? h0 + NSP_XW_PAIRS : t1;
                for (r = 0; r < 8; r++) a[r] = _mm512_setzero_ps();
                if (m == 8) {
                    const float *b0 = B + i * rs, *b1 = b0 + rs, *b2 = b1 + rs, *b3 = b2 + rs;
                    const float *b4 = b3 + rs, *b5 = b4 + rs, *b6 = b5 + rs, *b7 = b6 + rs;
                    __m512 a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
                    __m512 a4 = a[4], a5 = a[5], a6 = a[6], a7 = a[7];
                    for (h = h0; h < h1; h++) {
                        __m512 w = _mm512_loadu_ps(Wi + 16 * h);
                        a0 = _mm512_fmadd_ps(NSP_PAIR(b0 + 2 * h), w, a0);
                        a1 = _mm512_fmadd_ps(NSP_PAIR(b1 + 2 * h), w, a1);
                        a2 = _mm512_fmadd_ps(NSP_PAIR(b2 + 2 * h), w, a2);
                        a3 = _mm512_fmadd_ps(NSP_PAIR(b3 + 2 * h), w, a3);
                        a4 = _mm512_fmadd_ps(NSP_PAIR(b4 + 2 * h), w, a4);
                        a5 = _mm512_fmadd_ps(NSP_PAIR(b5 + 2 * h), w, a5);
                        a6 = _mm512_fmadd_ps(NSP_PAIR(b6 + 2 * h), w, a6);
                        a7 = _mm512_fmadd_ps(NSP_PAIR(b7 + 2 * h), w, a7);
                    }
                    a[0] = a0; a[1] = a1; a[2] = a2; a[3] = a3;
                    a[4] = a4; a[5] = a5; a[6] = a6; a[7] = a7;
                } else {
                    for (r = 0; r < m; r++) {
                        const float *b = B + (i + r) * rs;
                        for (h = h0; h < h1; h++)
                            a[r] = _mm512_fmadd_ps(NSP_PAIR(b + 2 * h),
                                                   _mm512_loadu_ps(Wi + 16 * h), a[r]);
                    }
                }
                for (r = 0; r < m; r++) {
                    double *y = Y + (i + r) * ly;
                    _mm512_storeu_ps(t, a[r]);
                    for (k = 0; k < 8; k++) y[k] += (double)(t[2 * k] + t[2 * k + 1]);
                }
            }
        }
        if (p % 2)  /* the last, unpaired column */
            for (i = 0; i < n; i++) {
                float x = B[i * rs + p - 1];
                for (k = 0; k < 8; k++)
                    Y[i * ly + k] += (double)(x * Wi[16 * q + 2 * k]);
            }
    }

    /* B^T Y by column tiles of NSP_TY_TILE columns and groups of 8 rows: each
       row is read as a contiguous run per tile (8 streams at a time, not 200
       rows 128 bytes each per strip of 32 columns: 2-3.5x faster, issue 22
       round 14). The tile's float32 sums wait in t between groups (stored
       and loaded exactly), so each sum is the same chain of FMAs over the
       chunk's rows in order as before, added once per chunk into G: the
       same bits. */
    #define NSP_TY_TILE 1024
    #define NSP_TY_ROWS 8  /* 16 and 32 were slower (issue 22 round 14) */
    __attribute__((target("avx512f")))
    static inline void nsp_ty_strip(const float *b, Py_ssize_t rs, Py_ssize_t g,
                                    const float *y, Py_ssize_t lyf, Py_ssize_t m, float *t)
    {
        /* t[k * 32 + c] += sum_r b[r * rs + c] y[r * lyf + k], c < m <= 32 */
        Py_ssize_t r, k;
        __m512 a[2][8];
        __mmask16 m0 = m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1u);
        __mmask16 m1 = m >= 32 ? (__mmask16)0xFFFF
                       : (m > 16 ? (__mmask16)((1u << (m - 16)) - 1u) : (__mmask16)0);
        for (k = 0; k < 8; k++) {
            a[0][k] = _mm512_loadu_ps(t + 32 * k);
            a[1][k] = _mm512_loadu_ps(t + 32 * k + 16);
        }
        for (r = 0; r < g; r++) {
            __m512 x0 = _mm512_maskz_loadu_ps(m0, b + r * rs);
            __m512 x1 = _mm512_maskz_loadu_ps(m1, b + r * rs + 16);
            for (k = 0; k < 8; k++) {
                __m512 yk = _mm512_set1_ps(y[r * lyf + k]);
                a[0][k] = _mm512_fmadd_ps(x0, yk, a[0][k]);
                a[1][k] = _mm512_fmadd_ps(x1, yk, a[1][k]);
            }
        }
        for (k = 0; k < 8; k++) {
            _mm512_storeu_ps(t + 32 * k, a[0][k]);
            _mm512_storeu_ps(t + 32 * k + 16, a[1][k]);
        }
    }

    __attribute__((target("avx512f")))
    static void nsp_xty8_512(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                             const float *Yf, Py_ssize_t lyf, double *G, Py_ssize_t lg)
    {
        Py_ssize_t i, i0, i1, j, j0, j1, k, g;
        float t[NSP_TY_TILE * 8];  /* per strip of 32 columns: 8 x 32 sums */
        for (i0 = 0; i0 < n; i0 += NSP_W8_CHUNK) {
            i1 = i0 + NSP_W8_CHUNK < n ? i0 + NSP_W8_CHUNK : n;
            for (j0 = 0; j0 < p; j0 += NSP_TY_TILE) {
                j1 = j0 + NSP_TY_TILE < p ? j0 + NSP_TY_TILE : p;
                memset(t, 0, sizeof t);
                for (i = i0; i < i1; i += NSP_TY_ROWS) {
                    g = i1 - i < NSP_TY_ROWS ? i1 - i : NSP_TY_ROWS;
                    for (j = j0; j < j1; j += 32)
                        nsp_ty_strip(B + i * rs + j, rs, g, Yf + i * lyf, lyf,
                                     j1 - j < 32 ? j1 - j : 32, t + 8 * (j - j0));
                }
                for (j = j0; j < j1; j++) {
                    double *gj = G + j * lg;
                    const float *tj = t + 8 * ((j - j0) & ~(Py_ssize_t)31) + ((j - j0) & 31);
                    for (k = 0; k < 8; k++) gj[k] += (double)tj[32 * k];
                }
            }
        }
    }

    /* The fused pass of one vector, 8 rows at a time: z_r = B_r v - shift_r
       in float64 (float32 values read once, products and sums in double),
       then acc += sum_r z_r B_r in float64 while the 8 rows are in cache:
       each row is read from memory once for both products. */
    __attribute__((target("avx512f")))
    static void nsp_fused8_512(const float *b, Py_ssize_t rs, Py_ssize_t p, const double *v,
                               const double *shift, double *z, double *acc)
    {
        Py_ssize_t j, r;
        __m512d s[8][2];
        double t[8];
        for (r = 0; r < 8; r++) { s[r][0] = _mm512_setzero_pd(); s[r][1] = s[r][0]; }
        for (j = 0; j + 16 <= p; j += 16) {
            __m512d v0 = _mm512_loadu_pd(v + j), v1 = _mm512_loadu_pd(v + j + 8);
            for (r = 0; r < 8; r++) {
                const float *x = b + r * rs + j;
                s[r][0] = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x)), v0, s[r][0]);
                s[r][1] = _mm512_fmadd_pd(_mm512_cvtps_pd(_mm256_loadu_ps(x + 8)), v1,
                                          s[r][1]);
            }
        }
        for (r = 0; r < 8; r++) {
            double d = _mm512_reduce_add_pd(_mm512_add_pd(s[r][0], s[r][1]));
            Py_ssize_t k;
            for (k = j; k < p; k++) d += (double)b[r * rs + k] * v[k];
            z[r] = t[r] = d - shift[r];
        }
        __m512d zr[8];
        for (r = 0; r < 8; r++) zr[r] = _mm512_set1_pd(t[r]);
        for (j = 0; j + 8 <= p; j += 8) {
            __m512d a = _mm512_loadu_pd(acc + j);
            for (r = 0; r < 8; r++)
                a = _mm512_fmadd_pd(zr[r], _mm512_cvtps_pd(_mm256_loadu_ps(b + r * rs + j)), a);
            _mm512_storeu_pd(acc + j, a);
        }
        for (; j < p; j++)
            for (r = 0; r < 8; r++) acc[j] += t[r] * (double)b[r * rs + j];
    }
    #endif

    static void nsp_xw8_plain(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                              const float *W, Py_ssize_t lw, double *Y, Py_ssize_t ly)
    {
        Py_ssize_t i, j, j0, j1, k;
        float a[8];
        for (i = 0; i < n; i++)
            for (j0 = 0; j0 < p; j0 += NSP_W8_CHUNK) {
                j1 = j0 + NSP_W8_CHUNK < p ? j0 + NSP_W8_CHUNK : p;
                for (k = 0; k < 8; k++) a[k] = 0.0f;
                for (j = j0; j < j1; j++)
                    for (k = 0; k < 8; k++) a[k] += B[i * rs + j] * W[lw * j + k];
                for (k = 0; k < 8; k++) Y[ly * i + k] += (double)a[k];
            }
    }

    static void nsp_xty8_plain(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                               const float *Yf, Py_ssize_t lyf, double *G, Py_ssize_t lg)
    {
        Py_ssize_t i, i0, i1, j, k;
        float a[8];
        for (i0 = 0; i0 < n; i0 += NSP_W8_CHUNK) {
            i1 = i0 + NSP_W8_CHUNK < n ? i0 + NSP_W8_CHUNK : n;
            for (j = 0; j < p; j++) {
                for (k = 0; k < 8; k++) a[k] = 0.0f;
                for (i = i0; i < i1; i++)
                    for (k = 0; k < 8; k++) a[k] += B[i * rs + j] * Yf[lyf * i + k];
                for (k = 0; k < 8; k++) G[lg * j + k] += (double)a[k];
            }
        }
    }

    static void nsp_fused_rows(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                               const double *v, const double *shift, double *z, double *acc,
                               int fma)
    {
        Py_ssize_t i = 0, j;
    #ifdef NSP_HAVE_FMA8
        if (fma == 2)
            for (; i + 8 <= n; i += 8)
                nsp_fused8_512(B + i * rs, rs, p, v, shift + i, z + i, acc);
    #endif
        for (; i < n; i++) {  /* one row at a time: the rows left, or no AVX-512 */
            const float *x = B + i * rs;
            double d = 0.0, zi;
            for (j = 0; j < p; j++) d += (double)x[j] * v[j];
            z[i] = zi = d - shift[i];
            for (j = 0; j < p; j++) acc[j] += zi * (double)x[j];
        }
    }

    static int nsp_fma8(void)
    {
    #ifdef NSP_HAVE_FMA8
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") ? 2 : 0;
    #else
        return 0;
    #endif
    }

    static void nsp_xw8(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                        const float *W, Py_ssize_t lw, const float *Wi, double *Y,
                        Py_ssize_t ly, int fma)
    {
    #ifdef NSP_HAVE_FMA8
        if (fma == 2) { nsp_xw8_512(B, rs, n, p, Wi, Y, ly); return; }
    #endif
        nsp_xw8_plain(B, rs, n, p, W, lw, Y, ly);
    }

    static void nsp_xty8(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                         const float *Yf, Py_ssize_t lyf, double *G, Py_ssize_t lg, int fma)
    {
    #ifdef NSP_HAVE_FMA8
        if (fma == 2) { nsp_xty8_512(B, rs, n, p, Yf, lyf, G, lg); return; }
    #endif
        nsp_xty8_plain(B, rs, n, p, Yf, lyf, G, lg);
    }

    NSP_STATS(nsp_stats_f, float)
    NSP_STATS(nsp_stats_d, double)
    NSP_M2(nsp_m2_f, float)
    NSP_M2(nsp_m2_d, double)

    /* The scan's tile in one call (issue 22 round 18): per chunk of columns,
       the sums, minima and maxima (one read from memory), mean_b = s / n and
       the centred sums of squares about it (a second read, from the cache),
       then Chan's merge into the running column statistics, here rather than
       in NumPy (twenty P-long NumPy operations per tile were 1.5x a streaming
       pass). Per column the arithmetic of NSP_STATS, NSP_M2 and the NumPy
       merge (_blocks._Stats), in the same order, with no contraction into
       FMAs: the same bits. The float32 chunks take AVX-512 where the CPU has
       it: minima and maxima in float32 (the same values are selected: the
       conversion to double is exact and monotone), sums in double. */
    #define NSP_SCAN_BYTES (1024 * 1024)
    #define NSP_SCAN_MAXW 2048
    #ifdef NSP_HAVE_FMA8
    __attribute__((target("avx512f"), optimize("fp-contract=off")))
    static void nsp_moments16_f(const float *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t w,
                                double *s, double *lo, double *hi, double *m2)
    {
        /* w: a multiple of 16; mean_b into lo's place is not needed: s / n
           is formed here, as the scalar code forms it. */
        float flo[NSP_SCAN_MAXW], fhi[NSP_SCAN_MAXW];
        double mb[NSP_SCAN_MAXW];
        Py_ssize_t i = 0, j;
        const __m512d zero = _mm512_setzero_pd();
        for (j = 0; j < w; j += 16) {
            _mm512_storeu_pd(s + j, zero); _mm512_storeu_pd(s + j + 8, zero);
            _mm512_storeu_pd(m2 + j, zero); _mm512_storeu_pd(m2 + j + 8, zero);
            _mm512_storeu_ps(flo + j, _mm512_set1_ps(INFINITY));
            _mm512_storeu_ps(fhi + j, _mm512_set1_ps(-INFINITY));
        }
    #define NSP_LO8(x) _mm512_cvtps_pd(_mm512_castps512_ps256(x))
    #define NSP_HI8(x) _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)))
        for (; i + 4 <= n; i += 4) {
            const float *r0 = T0 + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
            for (j = 0; j < w; j += 16) {
                __m512 x0 = _mm512_loadu_ps(r0 + j), x1 = _mm512_loadu_ps(r1 + j);
                __m512 x2 = _mm512_loadu_ps(r2 + j), x3 = _mm512_loadu_ps(r3 + j);
                __m512 a = _mm512_min_ps(_mm512_min_ps(x0, x1), _mm512_min_ps(x2, x3));
                __m512 b = _mm512_max_ps(_mm512_max_ps(x0, x1), _mm512_max_ps(x2, x3));
                _mm512_storeu_ps(flo + j, _mm512_min_ps(a, _mm512_loadu_ps(flo + j)));
                _mm512_storeu_ps(fhi + j, _mm512_max_ps(b, _mm512_loadu_ps(fhi + j)));
                __m512d t0 = _mm512_add_pd(_mm512_add_pd(NSP_LO8(x0), NSP_LO8(x1)),
                                           _mm512_add_pd(NSP_LO8(x2), NSP_LO8(x3)));
                __m512d t1 = _mm512_add_pd(_mm512_add_pd(NSP_HI8(x0), NSP_HI8(x1)),
                                           _mm512_add_pd(NSP_HI8(x2), NSP_HI8(x3)));
                _mm512_storeu_pd(s + j, _mm512_add_pd(_mm512_loadu_pd(s + j), t0));
                _mm512_storeu_pd(s + j + 8, _mm512_add_pd(_mm512_loadu_pd(s + j + 8), t1));
            }
        }
        for (; i < n; i++) {
            const float *r0 = T0 + i * rs;
            for (j = 0; j < w; j += 16) {
                __m512 x0 = _mm512_loadu_ps(r0 + j);
                _mm512_storeu_ps(flo + j, _mm512_min_ps(x0, _mm512_loadu_ps(flo + j)));
                _mm512_storeu_ps(fhi + j, _mm512_max_ps(x0, _mm512_loadu_ps(fhi + j)));
                _mm512_storeu_pd(s + j, _mm512_add_pd(_mm512_loadu_pd(s + j), NSP_LO8(x0)));
                _mm512_storeu_pd(s + j + 8, _mm512_add_pd(_mm512_loadu_pd(s + j + 8),
                                                          NSP_HI8(x0)));
            }
        }
        for (j = 0; j < w; j++) {
            lo[j] = (double)flo[j]; hi[j] = (double)fhi[j]; mb[j] = s[j] / (double)n;
        }
        for (i = 0; i + 4 <= n; i += 4) {
            const float *r0 = T0 + i * rs, *r1 = r0 + rs, *r2 = r1 + rs, *r3 = r2 + rs;
            for (j = 0; j < w; j += 16) {
                __m512 x0 = _mm512_loadu_ps(r0 + j), x1 = _mm512_loadu_ps(r1 + j);
                __m512 x2 = _mm512_loadu_ps(r2 + j), x3 = _mm512_loadu_ps(r3 + j);
                __m512d m0 = _mm512_loadu_pd(mb + j), m1 = _mm512_loadu_pd(mb + j + 8), d0, d1, d2, d3;
                _mm_prefetch((const char *)(r0 + w + j), _MM_HINT_T1);
                _mm_prefetch((const char *)(r1 + w + j), _MM_HINT_T1);
                _mm_prefetch((const char *)(r2 + w + j), _MM_HINT_T1);
                _mm_prefetch((const char *)(r3 + w + j), _MM_HINT_T1);
                d0 = _mm512_sub_pd(NSP_LO8(x0), m0); d1 = _mm512_sub_pd(NSP_LO8(x1), m0);
                d2 = _mm512_sub_pd(NSP_LO8(x2), m0); d3 = _mm512_sub_pd(NSP_LO8(x3), m0);
                _mm512_storeu_pd(m2 + j, _mm512_add_pd(_mm512_loadu_pd(m2 + j),
                    _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(d0, d0), _mm512_mul_pd(d1, d1)),
                                  _mm512_add_pd(_mm512_mul_pd(d2, d2), _mm512_mul_pd(d3, d3)))));
                d0 = _mm512_sub_pd(NSP_HI8(x0), m1); d1 = _mm512_sub_pd(NSP_HI8(x1), m1);
                d2 = _mm512_sub_pd(NSP_HI8(x2), m1); d3 = _mm512_sub_pd(NSP_HI8(x3), m1);
                _mm512_storeu_pd(m2 + j + 8, _mm512_add_pd(_mm512_loadu_pd(m2 + j + 8),
                    _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(d0, d0), _mm512_mul_pd(d1, d1)),
                                  _mm512_add_pd(_mm512_mul_pd(d2, d2), _mm512_mul_pd(d3, d3)))));
            }
        }
        for (; i < n; i++) {
            const float *r0 = T0 + i * rs;
            for (j = 0; j < w; j += 16) {
                __m512 x0 = _mm512_loadu_ps(r0 + j);
                __m512d d0 = _mm512_sub_pd(NSP_LO8(x0), _mm512_loadu_pd(mb + j));
                __m512d d1 = _mm512_sub_pd(NSP_HI8(x0), _mm512_loadu_pd(mb + j + 8));
                _mm512_storeu_pd(m2 + j, _mm512_add_pd(_mm512_loadu_pd(m2 + j),
                                                       _mm512_mul_pd(d0, d0)));
                _mm512_storeu_pd(m2 + j + 8, _mm512_add_pd(_mm512_loadu_pd(m2 + j + 8),
                                                           _mm512_mul_pd(d1, d1)));
            }
        }
    #undef NSP_LO8
    #undef NSP_HI8
    }
    #endif

    /* Chan's merge of a chunk's moments (nb rows) into the running ones (na
       rows), as _blocks._Stats._merge and np.minimum / np.maximum do it;
       returns the columns whose sum, minimum or maximum is not finite. */
    static Py_ssize_t nsp_merge(Py_ssize_t w, Py_ssize_t na, Py_ssize_t nb, const double *s,
                                const double *lo_b, const double *hi_b, const double *m2_b,
                                double *mean, double *m2, double *lo, double *hi)
    {
        Py_ssize_t j, bad = 0;
        double nt = (double)(na + nb), f1 = (double)(na * nb) / nt, f2 = (double)nb / nt;
        for (j = 0; j < w; j++) {
            double mb = s[j] / (double)nb, delta = mb - mean[j], t = delta * delta;
            t = t * f1;
            m2[j] = m2[j] + (m2_b[j] + t);
            t = delta * f2;
            mean[j] = mean[j] + t;
            lo[j] = (lo[j] < lo_b[j] || lo[j] != lo[j]) ? lo[j] : lo_b[j];
            hi[j] = (hi[j] > hi_b[j] || hi[j] != hi[j]) ? hi[j] : hi_b[j];
            bad += !(isfinite(s[j]) && isfinite(lo_b[j]) && isfinite(hi_b[j]));
        }
        return bad;
    }

    #define NSP_SCAN(NAME, T, STATS, M2, FAST16)                                          \
    static Py_ssize_t NAME(const T *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,      \
                           Py_ssize_t na, double *mean, double *m2, double *lo,          \
                           double *hi, int fma)                                         \
    {                                                                                   \
        double s[NSP_SCAN_MAXW], lo_b[NSP_SCAN_MAXW], hi_b[NSP_SCAN_MAXW];             \
        double mb[NSP_SCAN_MAXW], m2_b[NSP_SCAN_MAXW];                                  \
        Py_ssize_t j, j0, w, wv, bad = 0;                                               \
        Py_ssize_t width = NSP_SCAN_BYTES / (n * (Py_ssize_t)sizeof(T));                \
        width = width < 64 ? 64 : (width > NSP_SCAN_MAXW ? NSP_SCAN_MAXW : width - width % 16); \
        for (j0 = 0; j0 < p; j0 += width) {                                             \
            w = p - j0 < width ? p - j0 : width;                                        \
            wv = FAST16 ? w - w % 16 : 0;                                               \
            if (wv) nsp_moments16_f((const float *)(T0 + j0), rs, n, wv, s, lo_b, hi_b, m2_b); \
            if (w > wv) {                                                               \
                STATS(T0 + j0, rs, n, wv, w, s, lo_b, hi_b);                            \
                for (j = wv; j < w; j++) mb[j] = s[j] / (double)n;                      \
                M2(T0 + j0, rs, n, wv, w, mb, m2_b);                                    \
            }                                                                           \
            bad += nsp_merge(w, na, n, s, lo_b, hi_b, m2_b, mean + j0, m2 + j0,         \
                             lo + j0, hi + j0);                                         \
        }                                                                               \
        return bad;                                                                     \
    }
    #ifdef NSP_HAVE_FMA8
    NSP_SCAN(nsp_scan_f, float, nsp_stats_f, nsp_m2_f, fma == 2)
    #else
    #define nsp_moments16_f(...) ((void)0)
    NSP_SCAN(nsp_scan_f, float, nsp_stats_f, nsp_m2_f, 0)
    #endif
    NSP_SCAN(nsp_scan_d, double, nsp_stats_d, nsp_m2_d, 0)
    """
    void nsp_rmatvec_exact(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                           const double *z, double *acc) noexcept nogil
    int nsp_fma8() noexcept nogil
    void nsp_fused_rows(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                        const double *v, const double *shift, double *z, double *acc,
                        int fma) noexcept nogil
    void nsp_xw8(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p, const float *W,
                 Py_ssize_t lw, const float *Wi, double *Y, Py_ssize_t ly,
                 int fma) noexcept nogil
    void nsp_xty8(const float *B, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p, const float *Yf,
                  Py_ssize_t lyf, double *G, Py_ssize_t lg, int fma) noexcept nogil
    void nsp_stats_f(const float *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                     Py_ssize_t j1, double *s, double *lo, double *hi) noexcept nogil
    void nsp_stats_d(const double *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                     Py_ssize_t j1, double *s, double *lo, double *hi) noexcept nogil
    void nsp_m2_f(const float *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                  Py_ssize_t j1, const double *mean, double *m2) noexcept nogil
    void nsp_m2_d(const double *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t j0,
                  Py_ssize_t j1, const double *mean, double *m2) noexcept nogil
    Py_ssize_t nsp_scan_f(const float *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                          Py_ssize_t na, double *mean, double *m2, double *lo, double *hi,
                          int fma) noexcept nogil
    Py_ssize_t nsp_scan_d(const double *T0, Py_ssize_t rs, Py_ssize_t n, Py_ssize_t p,
                          Py_ssize_t na, double *mean, double *m2, double *lo, double *hi,
                          int fma) noexcept nogil


def rmatvec_exact(const float[:, :] B, const double[::1] z, double[::1] out):
    """``out += B^T z`` in float64 (``B`` float32 with contiguous rows)."""
    cdef Py_ssize_t n = B.shape[0], p = B.shape[1]
    if n == 0 or p == 0:
        return
    if B.strides[1] != sizeof(float):
        raise ValueError("rmatvec_exact: the rows of B must be contiguous")
    with nogil:
        nsp_rmatvec_exact(&B[0, 0], B.strides[0] // sizeof(float), n, p, &z[0], &out[0])


cdef inline void _stats_cols(const floating* T0, Py_ssize_t rs, Py_ssize_t n,
                             Py_ssize_t j0, Py_ssize_t j1,
                             double* s, double* lo, double* hi) noexcept nogil:
    """Sums, minima, maxima of columns ``j0:j1`` (``rs``: the row stride in
    elements): four rows per sweep of the accumulators."""
    if floating is float:
        nsp_stats_f(T0, rs, n, j0, j1, s, lo, hi)
    else:
        nsp_stats_d(T0, rs, n, j0, j1, s, lo, hi)


cdef inline void _m2_cols(const floating* T0, Py_ssize_t rs, Py_ssize_t n,
                          Py_ssize_t j0, Py_ssize_t j1,
                          const double* mean, double* m2) noexcept nogil:
    """Centred sums of squares of columns ``j0:j1``: four rows per sweep."""
    if floating is float:
        nsp_m2_f(T0, rs, n, j0, j1, mean, m2)
    else:
        nsp_m2_d(T0, rs, n, j0, j1, mean, m2)


cdef Py_ssize_t _row_stride(const floating[:, :] T, str name) except -1:
    if T.shape[0] and T.shape[1] and T.strides[1] != sizeof(floating):
        raise ValueError(f"{name}: the rows of T must be contiguous")
    return T.strides[0] // sizeof(floating) if T.shape[0] else 0


def column_stats(const floating[:, :] T, double[::1] s, double[::1] lo, double[::1] hi):
    """Column sums (float64), minima and maxima of ``T`` (rows contiguous),
    written into ``s``, ``lo``, ``hi``: one read of ``T``, four rows per sweep
    of the accumulators (a quarter of their loads and stores)."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "column_stats")
    if p == 0:
        return
    with nogil:
        _stats_cols(&T[0, 0] if n else NULL, rs, n, 0, p, &s[0], &lo[0], &hi[0])


def column_m2(const floating[:, :] T, const double[::1] mean, double[::1] m2):
    """Centred column sums of squares ``sum_i (T_ij - mean_j)^2`` (float64)
    into ``m2``: one read of ``T``, four rows per sweep of ``m2``."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "column_m2")
    if p == 0:
        return
    with nogil:
        _m2_cols(&T[0, 0] if n else NULL, rs, n, 0, p, &mean[0], &m2[0])


#: Columns per chunk of :func:`column_moments`: a chunk of a few hundred rows
#: stays in the core's cache between its two reads.
MOMENT_CHUNK_BYTES = 256 * 1024


def column_moments(const floating[:, :] T, double[::1] s, double[::1] lo, double[::1] hi,
                   double[::1] mean, double[::1] m2):
    """:func:`column_stats`, ``mean = s / n`` and :func:`column_m2` about that
    mean, by chunks of columns small enough that the second read of a chunk
    comes from the cache: per column, the arithmetic of the two calls (the
    same results, bit for bit), one read of ``T`` from memory."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "column_moments")
    cdef Py_ssize_t j, j0, j1, width
    cdef const floating* T0
    if p == 0:
        return
    width = MOMENT_CHUNK_BYTES // max(1, n * <Py_ssize_t>sizeof(floating))
    width = max(64, width - width % 8)
    T0 = &T[0, 0] if n else NULL
    with nogil:
        j0 = 0
        while j0 < p:
            j1 = min(p, j0 + width)
            _stats_cols(T0, rs, n, j0, j1, &s[0], &lo[0], &hi[0])
            for j in range(j0, j1):
                mean[j] = s[j] / n
            _m2_cols(T0, rs, n, j0, j1, &mean[0], &m2[0])
            j0 = j1


def scan_tile(const floating[:, :] T, Py_ssize_t n_before, double[::1] mean, double[::1] m2,
              double[::1] lo, double[::1] hi):
    """The scan's work on one tile ``T`` (rows contiguous) of a row block:
    :func:`column_moments` of its columns merged (Chan et al.) into the
    running column statistics ``mean``, ``m2``, ``lo``, ``hi`` of
    ``n_before`` rows, in place, in one call: per column the arithmetic of
    :func:`column_moments` and of :class:`neurospca.decomposition._blocks._Stats`'s
    NumPy merge, the same bits. Returns the number of columns whose sum,
    minimum or maximum is not finite (0: the tile is finite)."""
    cdef Py_ssize_t n = T.shape[0], p = T.shape[1], rs = _row_stride(T, "scan_tile")
    cdef Py_ssize_t bad
    if mean.shape[0] != p or m2.shape[0] != p or lo.shape[0] != p or hi.shape[0] != p:
        raise ValueError("scan_tile: shapes do not match")
    if n == 0 or p == 0:
        return 0
    with nogil:
        if floating is float:
            bad = nsp_scan_f(&T[0, 0], rs, n, p, n_before, &mean[0], &m2[0], &lo[0], &hi[0],
                             _FMA8)
        else:
            bad = nsp_scan_d(&T[0, 0], rs, n, p, n_before, &mean[0], &m2[0], &lo[0], &hi[0],
                             _FMA8)
    return bad


cdef int _FMA8 = nsp_fma8()
#: Whether this CPU runs the AVX-512 kernels (``fused_exact``, ``matmat8``,
#: ``rmatmat8``); without them the data path keeps BLAS and ``rmatvec_exact``
#: (the plain loops here are correct but slower).
FAST = _FMA8 == 2


def _use_avx512(bint on):
    """Tests only: run the AVX-512 kernels (``on``, where the CPU has them) or
    the plain C loops of a CPU without them; returns whether the AVX-512
    kernels ran before. :data:`FAST` (what the data path reads) is unchanged."""
    global _FMA8
    cdef bint before = _FMA8 == 2
    _FMA8 = nsp_fma8() if on else 0
    return before


def _check8(const float[:, :] B, Py_ssize_t n8, Py_ssize_t p8, str name, bint rows8):
    if B.shape[1] and B.shape[0] and B.strides[1] != sizeof(float):
        raise ValueError(f"{name}: the rows of B must be contiguous")
    if not rows8:
        raise ValueError(f"{name}: the rows of the 8-column arrays must be contiguous")
    if n8 != B.shape[0] or p8 != B.shape[1]:
        raise ValueError(f"{name}: shapes do not match")


def matmat8(const float[:, :] B, const float[:, :] W, const float[:, ::1] Wi,
            double[:, :] Y):
    """``Y += B W`` for float32 ``B`` (rows contiguous) and ``W`` of 8
    columns (``Wi``: :func:`pair_rows` ``(W)``): float32 products summed in
    float32 over chunks of columns, each chunk's sums added into the float64
    ``Y`` (n x 8)."""
    cdef Py_ssize_t n = B.shape[0], p = B.shape[1]
    if W.shape[1] != 8 or Y.shape[1] != 8 or Wi.shape[0] != (p + 1) // 2 or Wi.shape[1] != 16:
        raise ValueError("matmat8: W and Y must have 8 columns, Wi be pair_rows(W)")
    _check8(B, Y.shape[0], W.shape[0], "matmat8",
            W.strides[1] == sizeof(float) and Y.strides[1] == sizeof(double))
    if n == 0 or p == 0:
        return
    with nogil:
        nsp_xw8(&B[0, 0], B.strides[0] // sizeof(float), n, p, &W[0, 0],
                W.strides[0] // sizeof(float), &Wi[0, 0], &Y[0, 0],
                Y.strides[0] // sizeof(double), _FMA8)


def rmatmat8(const float[:, :] B, const float[:, :] Y, double[:, :] G):
    """``G += B^T Y`` for float32 ``B`` (rows contiguous) and ``Y`` of 8
    columns: float32 products summed in float32 over chunks of 256 rows,
    each chunk's sums added into the float64 ``G`` (p x 8)."""
    cdef Py_ssize_t n = B.shape[0], p = B.shape[1]
    if Y.shape[1] != 8 or G.shape[1] != 8:
        raise ValueError("rmatmat8: Y and G must have 8 columns")
    _check8(B, Y.shape[0], G.shape[0], "rmatmat8",
            Y.strides[1] == sizeof(float) and G.strides[1] == sizeof(double))
    if n == 0 or p == 0:
        return
    with nogil:
        nsp_xty8(&B[0, 0], B.strides[0] // sizeof(float), n, p, &Y[0, 0],
                 Y.strides[0] // sizeof(float), &G[0, 0], G.strides[0] // sizeof(double), _FMA8)


def pair_rows(W):
    """``W`` (p x 8 float32) with its rows in pairs, interleaved, as
    :func:`matmat8` takes it: ``Wi[h, 2 k + e] = W[2 h + e, k]`` (p rounded
    up to even with a zero row)."""
    import numpy as np

    W = np.asarray(W, dtype=np.float32)
    p = W.shape[0]
    Wp = np.zeros((p + p % 2, 8), np.float32)
    Wp[:p] = W
    return np.ascontiguousarray(Wp.reshape(-1, 2, 8).transpose(0, 2, 1).reshape(-1, 16))


def fused_exact(const float[:, :] B, const double[::1] v, const double[::1] shift,
                double[::1] z, double[::1] acc):
    """``z = B v - shift`` and ``acc += B^T z`` for float32 ``B`` (rows
    contiguous), every product and sum in float64, eight rows at a time so
    that each row is read from memory once for both products."""
    cdef Py_ssize_t n = B.shape[0], p = B.shape[1]
    if v.shape[0] != p or acc.shape[0] != p or shift.shape[0] != n or z.shape[0] != n:
        raise ValueError("fused_exact: shapes do not match")
    if n and p and B.strides[1] != sizeof(float):
        raise ValueError("fused_exact: the rows of B must be contiguous")
    if n == 0:
        return
    if p == 0:
        for i in range(n):
            z[i] = -shift[i]
        return
    with nogil:
        nsp_fused_rows(&B[0, 0], B.strides[0] // sizeof(float), n, p, &v[0], &shift[0],
                       &z[0], &acc[0], _FMA8)
