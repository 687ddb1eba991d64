// Local ESLint rules of this repository, registered in eslint.config.js.
import statementShapes from './citus-statement-shapes.js'
import indexOnly from './modules-index-only.js'

export default { rules: { 'statement-shapes': statementShapes, 'index-only': indexOnly } }
