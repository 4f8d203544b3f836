// the inspector (work in progress)
