#!/usr/bin/env Rscript
# sdcMicro's perturbative methods on a CSV, timed one by one, for benchmarks/perturbation.py.
#
# Usage:
#   R_LIBS=$SDCMICRO_LIB Rscript --vanilla benchmarks/sdcmicro_perturbation.R IN_CSV RANKSWAP_P [REPEAT]
#
# IN_CSV has numeric columns x1..xd and an integer column cat (codes 0..L-1). RANKSWAP_P is
# sdcMicro's P (a fraction). Prints one line per method: TIME,<name>,<elapsed seconds>; each
# clock covers the sdcMicro call only (addNoise on the data frame of the x columns, with its
# own checks; not reading the CSV), the median of REPEAT calls (default 1; rankSwap: one).

suppressPackageStartupMessages(library(sdcMicro))

args <- commandArgs(trailingOnly = TRUE)
if (!(length(args) %in% 2:3)) stop("usage: sdcmicro_perturbation.R IN_CSV RANKSWAP_P [REPEAT]")
d <- read.csv(args[1])
P <- as.numeric(args[2])
repeats <- if (length(args) == 3) as.integer(args[3]) else 1L
num <- d[, grep("^x", names(d)), drop = FALSE]
f <- factor(d$cat)

set.seed(1)
timed <- function(name, expr, times = repeats) {
  e <- substitute(expr)
  t <- vapply(seq_len(times), function(i) system.time(eval(e))[["elapsed"]], numeric(1))
  cat(sprintf("TIME,%s,%.4f\n", name, stats::median(t)))
}
timed("pram", pram(f))
timed("add_noise additive", addNoise(num, noise = 150, method = "additive"))
timed("add_noise correlated", addNoise(num, noise = 150, method = "correlated"))
timed("add_noise restricted", addNoise(num, noise = 150, method = "restr"))
timed("rank_swap", rankSwap(num, P = P, TopPercent = 0, BottomPercent = 0, R0 = NULL,
                            K0 = NULL, seed = 1), times = 1L)
timed("top_bottom_code", topBotCoding(num[[1]], value = 2, replacement = 2, kind = "top"))
if (ncol(num) >= 3) {
  form <- as.formula(paste(paste(names(num)[-1], collapse = " + "), "~", names(num)[1]))
  timed("shuffle ds", sdcMicro:::shuffleWORK(num, form, method = "ds", gadp = FALSE))
}
