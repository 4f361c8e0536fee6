# The raw file's risk with sdcMicro, for benchmarks/assess.py: Adult's seven keys as
# categories, fnlwgt the weight; createSdcObj (frequencies, individual and global risk) and
# suda2. Prints below2=<n> below5=<n> (records whose key combination fewer than 2, 5 records
# share, missing values matching any value as sdcMicro counts them).
suppressWarnings(suppressMessages(library(sdcMicro)))
args <- commandArgs(trailingOnly = TRUE)
adult <- read.csv(args[1], na.strings = "?", stringsAsFactors = TRUE, check.names = FALSE)
keys <- c("age", "sex", "race", "marital-status", "education", "workclass", "native-country")
adult$age <- factor(adult$age)
names(adult) <- make.names(names(adult))
keys <- make.names(keys)
sdc <- createSdcObj(adult, keyVars = keys, weightVar = "fnlwgt")
risk <- sdc@risk
fk <- sdc@risk$individual[, "fk"]
s <- suda2(adult[, keys])
cat(sprintf("below2=%d below5=%d global=%g\n", sum(fk < 2), sum(fk < 5), risk$global$risk))
