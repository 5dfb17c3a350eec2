import '../src/service/service'
import '../test/helpers/service'
import '../test/helpers/dashboard'
import '../test/helpers/cli'
