module sluicesim

go 1.26
