/* lhsim sweep — the grid: its axes, graphs and hardware, running one point, its row, the
 * table and the plot. */
#pragma once

#include "cli/sweep.h"

typedef enum { AX_FILE, AX_GEN, AX_HW, AX_SCHED, AX_PARAM, AX_SEED } AxisKind;

typedef struct {
	AxisKind kind;
	char *column;      /* its CSV column ("scheduler", "hw.pcie_gbs", "gen.offload", ...) */
	char *key;         /* parameter, hardware key or generator option ("seed" for seeds) */
	char *arg;         /* the argument as given, for messages ("-p async-compute-limit=1:4") */
	GPtrArray *values; /* of char *: the values as text, in grid order */
} Axis;

typedef enum { METRIC_MAKESPAN, METRIC_PEAK, METRIC_EXPOSED } Metric;

typedef struct {
	/* Axes in grid order, outermost first: file, gen..., hw..., scheduler, param..., seed. */
	GPtrArray *axes;   /* of Axis */
	guint n;           /* points: the product of the axes' sizes */
	guint sched_axis;  /* index of the scheduler axis */
	GPtrArray *scheds; /* of CliSched, the scheduler axis's entries */
	char **fixed;      /* the fixed -p K=V */
	/* Graphs by graph coordinate (file, gen options, and the seed when the workload takes
	 * one); hardware by hardware coordinate. */
	GPtrArray *graphs; /* of LhGraph */
	GPtrArray *files;  /* of char *: the GRAPH of each file coordinate (NULL: generated) */
	GPtrArray *hws;    /* of LhHw */
	gboolean gen_seed; /* the generated workload takes the seed */
	char *fixed_desc;  /* fixed settings for titles: "memory-limit=0.5 hw.pcie_gbs=64" */
} Grid;

typedef struct {
	gboolean ok, over_memory;
	char *error;
	gint64 makespan, peak_device, exposed;
	double bound, ratio, overlap;
} Result;

typedef struct {
	GPtrArray *files; /* GRAPH arguments, expanded */
	char **params, **hw_sets, **gens;
	const char *seeds, *sched, *hw_name, *profile;
} GridSpec;

void grid_free(Grid *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Grid, grid_free)

/* Builds the grid, its graphs and its hardware; returns 0, or the exit status after saying
 * what is wrong (2 for a bad argument, naming it). */
int grid_new(const GridSpec *spec, Grid **out);
gboolean grid_parse_metric(const char *s, Metric *m);
/* -o: one or two swept axes besides the schedulers and the seeds; else prints, returns 2. */
int grid_check_plot(const Grid *g);
char **grid_header(const Grid *g);
/* The point whose run point @i repeats (itself, unless its scheduler lacks a swept axis). */
guint grid_canonical(const Grid *g, guint i);
void grid_run_point(const Grid *g, guint i, gboolean strict, Result *r);
/* The row of point @i from the result of its canonical point. */
char **grid_row(const Grid *g, guint i, const Result *r);
/* Reads @path: the rows of @sel it has go into @rows. A missing file has none. */
int grid_resume(const Grid *g, const char *path, char **header, const GArray *sel, char ***rows,
                guint *n_resumed);
/* Prints the table of the rows of @sel to @f (NULL: nothing); returns how many failed. */
guint grid_report(const Grid *g, char **header, char ***rows, const GArray *sel, FILE *f);
int grid_plot(const Grid *g, char **header, char ***rows, const char *path, Metric m);

/* The points one process runs: a queue of jobs (point indexes) that local threads and, under
 * MPI, the other ranks take from; each result lands at its point's index. */
typedef struct {
	const Grid *grid;
	gboolean strict;
	Result *res;        /* by point */
	gboolean *finished; /* by point: its result is in (read under lock) */
	const guint *jobs;
	guint n_jobs, next, done;
	GMutex lock;
	GCond cond;
} SweepRun;

/* Takes the next job; FALSE when none is left. */
gboolean sweep_run_take(SweepRun *r, guint *i);
/* Marks point @i's result as in, and wakes the thread that waits for it. */
void sweep_run_finish(SweepRun *r, guint i);

/* MPI (cli/sweep-mpi.c). The size and rank come from the environment mpirun sets, so that
 * they are known before MPI starts: size 1 and rank 0 without mpirun. */
guint sweep_mpi_size(void);
guint sweep_mpi_rank(void);
gboolean sweep_mpi_built(void);
/* Starts MPI; 0, or the exit status after a message. */
int sweep_mpi_init(void);
void sweep_mpi_finalize(void);
/* Rank 0: hands the jobs out to the other ranks, one at a time as each asks for the next
 * (dynamic: a rank that finishes early asks again), and stores the results they send back,
 * until every job is done and every rank has been told to stop. Calls @tick about every
 * millisecond while it waits. */
int sweep_mpi_serve(SweepRun *r, void (*tick)(gpointer), gpointer data);
/* The other ranks: runs the points rank 0 hands out until it says stop. */
int sweep_mpi_work(const Grid *g, gboolean strict);
