module mongobench.io/wireserver

go 1.26

require go.mongodb.org/mongo-driver v1.17.10
