/* Correctly rounded decimal -> double conversion for the Matrix Market
 * reader. strtod is exact but slow (locale lookups, arbitrary precision);
 * matrix files hold numbers with at most 17-19 significant digits and
 * modest exponents, which exact 128-bit integer arithmetic covers:
 *   value = m * 10^E = m * 5^E * 2^E,  m < 10^19, |E| <= 27 (5^27 < 2^63),
 * so m * 5^E is an exact 128-bit product and m / 5^|E| an exact quotient
 * plus a sticky remainder; one rounding to 53 bits then gives the correctly
 * rounded double. Everything else falls back to strtod. */
#include "mmio_internal.h"

#include <stdlib.h>
#include <string.h>

__extension__ typedef unsigned __int128 u128;

static const double exact_pow10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static const uint64_t pow5[28] = {
    UINT64_C(1), UINT64_C(5), UINT64_C(25), UINT64_C(125),
    UINT64_C(625), UINT64_C(3125), UINT64_C(15625), UINT64_C(78125),
    UINT64_C(390625), UINT64_C(1953125), UINT64_C(9765625), UINT64_C(48828125),
    UINT64_C(244140625), UINT64_C(1220703125), UINT64_C(6103515625), UINT64_C(30517578125),
    UINT64_C(152587890625), UINT64_C(762939453125), UINT64_C(3814697265625),
    UINT64_C(19073486328125), UINT64_C(95367431640625), UINT64_C(476837158203125),
    UINT64_C(2384185791015625), UINT64_C(11920928955078125), UINT64_C(59604644775390625),
    UINT64_C(298023223876953125), UINT64_C(1490116119384765625),
    UINT64_C(7450580596923828125)};

static int bitlen128(u128 x)
{
    uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
    if (hi)
        return 128 - __builtin_clzll(hi);
    return lo ? 64 - __builtin_clzll(lo) : 0;
}

/* Round (q + sticky fraction) * 2^bexp to the nearest double, ties to even.
 * Returns 0 when the result would not be a normal double. */
static int round_to_double(u128 q, int sticky, int bexp, double *out)
{
    int L = bitlen128(q);
    uint64_t mant;
    int shift = L - 53;
    if (shift <= 0) {
        if (sticky)
            return 0; /* cannot happen for our callers; stay exact anyway */
        mant = (uint64_t)q << -shift;
    } else {
        mant = (uint64_t)(q >> shift);
        u128 rem = q & (((u128)1 << shift) - 1);
        u128 half = (u128)1 << (shift - 1);
        if (rem > half || (rem == half && (sticky || (mant & 1))))
            mant++;
        if (mant == (UINT64_C(1) << 53)) {
            mant >>= 1;
            shift++;
        }
    }
    int biased = 52 + shift + bexp + 1023;
    if (biased < 1 || biased > 2046)
        return 0;
    uint64_t bits = ((uint64_t)biased << 52) | (mant & ((UINT64_C(1) << 52) - 1));
    memcpy(out, &bits, sizeof bits);
    return 1;
}

static int fallback(const char *p, const char **end, double *out)
{
    /* strtod also reads C99 hexadecimal ("0x10" = 16), which Matrix Market
     * does not allow: a file that has it was not written for this format. */
    const char *q = p + (*p == '-' || *p == '+');
    if (q[0] == '0' && (q[1] == 'x' || q[1] == 'X'))
        return 0;
    char *e;
    double v = strtod(p, &e);
    if (e == p)
        return 0;
    *end = e;
    *out = v;
    return 1;
}

int ks_num_parse_double(const char *p, const char **end, double *out)
{
    const char *s = p;
    int neg = 0;
    if (*s == '-' || *s == '+')
        neg = *s++ == '-';
    uint64_t m = 0;
    int nd = 0, any = 0, inexact = 0;
    long dexp = 0;
    while ((unsigned)(*s - '0') < 10) {
        unsigned d = (unsigned)(*s++ - '0');
        any = 1;
        if (m == 0 && d == 0)
            continue;
        if (nd < 19) {
            m = m * 10 + d;
            nd++;
        } else {
            dexp++;
            inexact |= d != 0;
        }
    }
    if (*s == '.') {
        s++;
        while ((unsigned)(*s - '0') < 10) {
            unsigned d = (unsigned)(*s++ - '0');
            any = 1;
            if (m == 0 && d == 0) {
                dexp--;
                continue;
            }
            if (nd < 19) {
                m = m * 10 + d;
                nd++;
                dexp--;
            } else {
                inexact |= d != 0;
            }
        }
    }
    if (!any)
        return fallback(p, end, out); /* "inf", "nan", ".", garbage */
    if (*s == 'e' || *s == 'E') {
        const char *t = s + 1;
        int eneg = 0;
        if (*t == '-' || *t == '+')
            eneg = *t++ == '-';
        if ((unsigned)(*t - '0') < 10) {
            long ev = 0;
            while ((unsigned)(*t - '0') < 10) {
                if (ev < 100000)
                    ev = ev * 10 + (*t - '0');
                t++;
            }
            dexp += eneg ? -ev : ev;
            s = t;
        } /* else: "1e" -- the number ends before 'e' and the caller rejects the 'e' */
    }
    if (inexact || (*s == 'x' || *s == 'X'))
        return fallback(p, end, out);
    double v;
    if (m == 0) {
        v = 0.0;
    } else if (m < (UINT64_C(1) << 53) && dexp >= -22 && dexp <= 22) {
        /* Both operands exact: one IEEE operation rounds correctly. */
        v = dexp >= 0 ? (double)m * exact_pow10[dexp] : (double)m / exact_pow10[-dexp];
    } else if (dexp >= 0 && dexp <= 27) {
        if (!round_to_double((u128)m * pow5[dexp], 0, (int)dexp, &v))
            return fallback(p, end, out);
    } else if (dexp < 0 && dexp >= -27) {
        int k = (int)-dexp;
        uint64_t d = pow5[k];
        int sh = 128 - (64 - __builtin_clzll(m));
        u128 num = (u128)m << sh;
        u128 q = num / d;
        int sticky = num % d != 0;
        if (!round_to_double(q, sticky, -sh - k, &v))
            return fallback(p, end, out);
    } else {
        return fallback(p, end, out);
    }
    *out = neg ? -v : v;
    *end = s;
    return 1;
}
