module gowait

go 1.22
