module github.com/allot-sched/allot

go 1.26.8
