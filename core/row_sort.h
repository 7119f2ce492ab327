/* The one row sort of the setup code: ascending by column, for rows of
 * distinct columns (so the order is unique and any algorithm gives the same
 * result). Rows are short (tens to hundreds of entries): insertion sort,
 * and above KS_ROW_SORT_SMALL entries an inlined quicksort (median of
 * three, smaller side first, so the stack stays O(log n)) rather than
 * qsort, whose callback per comparison would cost more than building the
 * row. KS_ROW_SORT_DEFINE(name, T, KEY) defines
 *     static void name(T *e, size_t m)
 * sorting m elements by the column KEY(e[i]); the element types differ
 * (bare columns, (column, value) pairs), the logic does not. Not installed. */
#ifndef KS_ROW_SORT_H
#define KS_ROW_SORT_H

#include <stddef.h>

#define KS_ROW_SORT_SMALL 32

#define KS_ROW_SORT_DEFINE(name, T, KEY)                                                      \
    static void name(T *e, size_t m)                                                          \
    {                                                                                         \
        while (m > KS_ROW_SORT_SMALL) {                                                       \
            const ks_int a_ = KEY(e[0]), b_ = KEY(e[m / 2]), d_ = KEY(e[m - 1]);              \
            const ks_int piv = a_ < b_ ? (b_ < d_ ? b_ : (a_ < d_ ? d_ : a_))                 \
                                       : (a_ < d_ ? a_ : (b_ < d_ ? d_ : b_));                \
            size_t i = 0, j = m - 1;                                                          \
            for (;;) { /* Hoare partition: e[0..j] <= piv <= e[j+1..m) */                     \
                while (KEY(e[i]) < piv)                                                       \
                    i++;                                                                      \
                while (KEY(e[j]) > piv)                                                       \
                    j--;                                                                      \
                if (i >= j)                                                                   \
                    break;                                                                    \
                T t_ = e[i];                                                                  \
                e[i] = e[j];                                                                  \
                e[j] = t_;                                                                    \
                i++;                                                                          \
                j--;                                                                          \
            }                                                                                 \
            const size_t left = j + 1, right = m - left;                                      \
            if (left < right) {                                                               \
                name(e, left);                                                                \
                e += left;                                                                    \
                m = right;                                                                    \
            } else {                                                                          \
                name(e + left, right);                                                        \
                m = left;                                                                     \
            }                                                                                 \
        }                                                                                     \
        for (size_t a_ = 1; a_ < m; a_++) {                                                   \
            T t_ = e[a_];                                                                     \
            size_t b_ = a_;                                                                   \
            while (b_ > 0 && KEY(e[b_ - 1]) > KEY(t_)) {                                      \
                e[b_] = e[b_ - 1];                                                            \
                b_--;                                                                         \
            }                                                                                 \
            e[b_] = t_;                                                                       \
        }                                                                                     \
    }

/* KEY for bare column arrays. */
#define KS_ROW_SORT_SELF(x) (x)

#endif
