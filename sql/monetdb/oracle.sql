-- The timestamp oracle in MonetDB C UDFs (paper, section 3.1.3). Needs a server started
-- with embedded_c=true. One multiplexed table function holds all state, because MonetDB
-- compiles each C function into its own shared object: one function, one state. The
-- comment naming the schema makes each tique database's function (and so its state)
-- distinct. State lives in server memory and is lost on restart: until a client seeds
-- it from the committed log (op 2), BEGIN answers -1 and the client runs recovery.
--
-- Invariants (all under one pthread mutex):
-- * txids and commit timestamps are unique and increase;
-- * snapshot = largest S such that every commit timestamp <= S is resolved;
-- * waiters block on a condition variable (no polling) and never beyond the deadline
--   of the commit timestamp they wait for, which its owner set when taking it.
--
-- ops: 1 claim recovery  2 seed(next_txid, last_cts)  3 begin(session)  4 end(txid)
--      5 take(txid, lease_ms)  6 publish(txid, cts)  7 resolve(cts)  8 stable
--      9 status  10 active list  11 expire(txid)  12 latch(acquire?, lease_ms)  13 decide(cts)
--      14 rebind(session id)  15 await(cts)  16 verdict(cts)
CREATE OR REPLACE FUNCTION tq_oracle(op INTEGER, a BIGINT, b BIGINT) RETURNS TABLE(r1 BIGINT, r2 BIGINT, r3 BIGINT) LANGUAGE C {
#include <pthread.h>
#include <time.h>
    /* tique database: TQ_NAMESPACE */
    /* tique oracle ops: 1-16 (an install finding fewer replaces it) */
    typedef struct { long long txid, sts, session; } tq_active;
    typedef struct { long long cts, txid, conflicts; double deadline, taken; int resolved, decided, expired; } tq_pending;
    static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
    static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
    static int seeded = 0;
    static double claimed_until = 0;
    static long long next_txid = 1, next_cts = 1, snapshot = 0;
    static tq_active *active = NULL;
    static size_t n_active = 0, cap_active = 0;
    static tq_pending *pending = NULL;
    static size_t n_pending = 0, cap_pending = 0;
    static double latch_until = 0;
    struct timespec now_ts;
    double now;
    long long out1[1] = {0}, out2[1] = {0}, out3[1] = {0};
    long long *rows1 = out1, *rows2 = out2, *rows3 = out3;
    size_t n_rows = 1, i, k;
    int code = op.data[0];
    long long x = a.data[0], y = b.data[0];

    pthread_mutex_lock(&mutex);
    clock_gettime(CLOCK_REALTIME, &now_ts);
    now = now_ts.tv_sec + now_ts.tv_nsec / 1e9;

#define TQ_ADVANCE() do { int moved = 0, again = 1;  while (again) { again = 0;  for (k = 0; k < n_pending; k++) {  if (pending[k].cts == snapshot + 1 && pending[k].resolved) {  snapshot++; pending[k] = pending[--n_pending]; again = 1; moved = 1; break; } } }  if (moved) pthread_cond_broadcast(&changed); } while (0)
#define TQ_RESOLVE(c) do { int found = 0;  for (k = 0; k < n_pending; k++) if (pending[k].cts == (c)) { pending[k].resolved = 1; found = 1; }  if (!found && (c) > snapshot) {  if (n_pending == cap_pending) { cap_pending = cap_pending ? 2 * cap_pending : 64;  pending = realloc(pending, cap_pending * sizeof(tq_pending)); }  pending[n_pending].cts = (c); pending[n_pending].txid = 0; pending[n_pending].conflicts = 0; pending[n_pending].deadline = 0; pending[n_pending].taken = now;  pending[n_pending].resolved = 1; pending[n_pending].decided = 1; pending[n_pending].expired = 0; n_pending++; }  TQ_ADVANCE(); } while (0)
#define TQ_DROP_ACTIVE(t) do { for (k = 0; k < n_active; k++) if (active[k].txid == (t)) {  active[k] = active[--n_active]; break; } } while (0)

    if (code == 1) {            /* claim recovery: 1 = already seeded, 0 = caller recovers */
        while (!seeded && claimed_until > now) {
            struct timespec until = now_ts; until.tv_sec += 1;
            pthread_cond_timedwait(&changed, &mutex, &until);
            clock_gettime(CLOCK_REALTIME, &now_ts);
            now = now_ts.tv_sec + now_ts.tv_nsec / 1e9;
        }
        if (seeded) out1[0] = 1; else { claimed_until = now + 60; out1[0] = 0; }
    } else if (code == 2) {     /* seed from the committed log */
        if (!seeded) { next_txid = x; next_cts = y + 1; snapshot = y; seeded = 1; n_pending = 0; n_active = 0; }
        pthread_cond_broadcast(&changed);
        out1[0] = 1;
    } else if (!seeded) {
        out1[0] = -1;           /* state lost (restart): recover first */
    } else if (code == 3) {     /* begin(session) -> txid, sts */
        if (n_active == cap_active) { cap_active = cap_active ? 2 * cap_active : 64;
            active = realloc(active, cap_active * sizeof(tq_active)); }
        active[n_active].txid = next_txid++; active[n_active].sts = snapshot; active[n_active].session = x;
        out1[0] = active[n_active].txid; out2[0] = snapshot; n_active++;
        /* how long the next commit timestamp has been undecided (ms): a client that sees
           an old one checks whether its outcome is already written (owner died after it) */
        for (k = 0; k < n_pending; k++) if (pending[k].cts == snapshot + 1 && !pending[k].resolved) out3[0] = (long long)((now - pending[k].taken) * 1000);
    } else if (code == 4 || code == 11) {   /* end(txid) / expire(txid) */
        TQ_DROP_ACTIVE(x);
    } else if (code == 5) {     /* take(txid, lease_ms) -> cts */
        if (n_pending == cap_pending) { cap_pending = cap_pending ? 2 * cap_pending : 64;
            pending = realloc(pending, cap_pending * sizeof(tq_pending)); }
        pending[n_pending].cts = next_cts++; pending[n_pending].txid = x; pending[n_pending].conflicts = 0;
        pending[n_pending].deadline = now + y / 1000.0; pending[n_pending].taken = now; pending[n_pending].resolved = 0; pending[n_pending].decided = 0; pending[n_pending].expired = 0;
        out1[0] = pending[n_pending].cts; n_pending++;
    } else if (code == 6 || code == 15) {  /* publish(txid, cts) / await(cts): 0 = visible; 1 = r2 (owner r3) is stuck */
        /* await(cts) waits, as publish does, until every commit timestamp below cts is
           resolved, leaving cts itself (still undecided) alone: ordered certification */
        long long target = code == 6 ? y : x - 1;
        if (code == 6) { TQ_DROP_ACTIVE(x); TQ_RESOLVE(y); }
        for (;;) {
            tq_pending *blocker = NULL;
            if (snapshot >= target) { out1[0] = 0; break; }
            for (k = 0; k < n_pending; k++) if (pending[k].cts == snapshot + 1) blocker = &pending[k];
            if (blocker != NULL && !blocker->resolved && blocker->deadline <= now) {
                if (!blocker->decided) {   /* abort it: its owner can no longer claim it */
                    blocker->expired = 1;
                    out1[0] = 1; out2[0] = blocker->cts; out3[0] = blocker->txid; break;
                }
                /* claimed by its owner, marker not yet published: only the owner's death
                   (checked by the caller in sys.sessions) lets anyone else decide it */
                {
                    long long session = -1;
                    for (k = 0; k < n_active; k++) if (active[k].txid == blocker->txid) session = active[k].session;
                    struct timespec until = now_ts; until.tv_nsec += 100000000L;
                    if (until.tv_nsec >= 1000000000L) { until.tv_sec += 1; until.tv_nsec -= 1000000000L; }
                    pthread_cond_timedwait(&changed, &mutex, &until);
                    out1[0] = 2; out2[0] = blocker->cts; out3[0] = session; break;
                }
            }
            {
                double wake = blocker != NULL ? blocker->deadline : now + 0.05;
                struct timespec until;
                until.tv_sec = (time_t)wake; until.tv_nsec = (long)((wake - (time_t)wake) * 1e9);
                pthread_cond_timedwait(&changed, &mutex, &until);
            }
            clock_gettime(CLOCK_REALTIME, &now_ts);
            now = now_ts.tv_sec + now_ts.tv_nsec / 1e9;
        }
    } else if (code == 7) {     /* resolve(cts): its abort marker is written */
        TQ_RESOLVE(x);
    } else if (code == 8) {     /* stable timestamp: at most every running start timestamp */
        long long stable = snapshot;
        for (k = 0; k < n_active; k++) if (active[k].sts < stable) stable = active[k].sts;
        out1[0] = stable;
    } else if (code == 9) {     /* status */
        out1[0] = snapshot; out2[0] = next_cts - 1; out3[0] = (long long)n_active;
    } else if (code == 10) {    /* running transactions: txid, sts, session */
        n_rows = n_active;
        rows1 = malloc((n_rows + 1) * sizeof(long long));
        rows2 = malloc((n_rows + 1) * sizeof(long long));
        rows3 = malloc((n_rows + 1) * sizeof(long long));
        for (k = 0; k < n_rows; k++) { rows1[k] = active[k].txid; rows2[k] = active[k].sts; rows3[k] = active[k].session; }
    } else if (code == 13) {    /* decide(cts, conflicts): 1 = the owner may write its marker, 0 = it was aborted */
        /* conflicts: what its certification found, kept for verdict (op 16) and answered in r2;
           below 0 the owner's writes did not commit, so it claims nothing */
        out1[0] = 0;
        if (y >= 0) for (k = 0; k < n_pending; k++) if (pending[k].cts == x) { if (!pending[k].expired) { pending[k].decided = 1; pending[k].conflicts = y; out1[0] = 1; out2[0] = y; } }
    } else if (code == 16) {    /* verdict(cts): r1 1 = claimed by its owner (decide), r2 = the conflicts decide recorded */
        out1[0] = 0;
        for (k = 0; k < n_pending; k++) if (pending[k].cts == x && pending[k].decided && !pending[k].expired && !pending[k].resolved) { out1[0] = 1; out2[0] = pending[k].conflicts; }
    } else if (code == 14) {    /* rebind(session id): the server reused it, so its earlier holder is gone */
        for (k = 0; k < n_active; k++) if ((active[k].session & 0xFFFF) == x) active[k].session = -1;
    } else if (code == 12) {    /* checkpoint latch: acquire (x=1, lease y ms) or release (x=0) */
        if (x == 1 && latch_until <= now) { latch_until = now + y / 1000.0; out1[0] = 1; }
        else if (x == 0) { latch_until = 0; out1[0] = 1; }
    }
    pthread_mutex_unlock(&mutex);

    r1->initialize(r1, n_rows);
    r2->initialize(r2, n_rows);
    r3->initialize(r3, n_rows);
    for (i = 0; i < n_rows; i++) { r1->data[i] = rows1[i]; r2->data[i] = rows2[i]; r3->data[i] = rows3[i]; }
    if (rows1 != out1) { free(rows1); free(rows2); free(rows3); }
};

-- Write-set key hash: 64-bit FNV-1a of the (table, key) text, top bit cleared.
CREATE OR REPLACE FUNCTION tq_hash(s STRING) RETURNS BIGINT LANGUAGE C {
    size_t i;
    result->initialize(result, s.count);
    for (i = 0; i < s.count; i++) {
        unsigned long long h = 1469598103934665603ULL;
        const unsigned char *p = (const unsigned char *) s.data[i];
        if (s.is_null(s.data[i])) { result->data[i] = result->null_value; continue; }
        for (; *p; p++) { h ^= *p; h *= 1099511628211ULL; }
        result->data[i] = (long long)(h >> 1);
    }
};
